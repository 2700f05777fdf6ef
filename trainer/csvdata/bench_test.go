package csvdata

import (
	"bytes"
	"context"
	"strconv"
	"strings"
	"testing"

	"ramanserve/trainer"
)

// BenchmarkRead2000x2048 parses a 2000-row contract CSV (about 45 MB of
// numbers printed with 6-7 significant digits).
func BenchmarkRead2000x2048(b *testing.B) {
	var buf bytes.Buffer
	buf.WriteString(strings.Join(Header(trainer.NumWavenumbers), ",") + "\n")
	num := make([]byte, 0, 32)
	for i := 0; i < 2000; i++ {
		buf.WriteString("scan" + strconv.Itoa(i))
		for j := 0; j < trainer.NumWavenumbers; j++ {
			num = strconv.AppendFloat(num[:0], 10000+float64((i*7919+j*104729)%100000)/7.3, 'f', 3, 64)
			buf.WriteByte(',')
			buf.Write(num)
		}
		buf.WriteString(",31.5,20.25,4.125\n")
	}
	data := buf.Bytes()
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		ds, err := Read(context.Background(), bytes.NewReader(data), Options{})
		if err != nil || ds.Len() != 2000 {
			b.Fatal(err)
		}
	}
}
