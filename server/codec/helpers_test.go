package codec

import (
	"testing"

	"github.com/vmihailenco/msgpack/v5"
)

// ordered is a MessagePack map whose keys are written in the given order:
// key, value, key, value, ... It lets tests control key order, which Go
// maps would randomise.
type ordered []any

func (o ordered) EncodeMsgpack(e *msgpack.Encoder) error {
	if err := e.EncodeMapLen(len(o) / 2); err != nil {
		return err
	}
	for _, v := range o {
		if err := e.Encode(v); err != nil {
			return err
		}
	}
	return nil
}

// raw is pre-encoded MessagePack inserted verbatim.
type raw []byte

func (r raw) EncodeMsgpack(e *msgpack.Encoder) error {
	_, err := e.Writer().Write(r)
	return err
}

// pack encodes v with the independent reference encoder.
func pack(t testing.TB, v any) []byte {
	t.Helper()
	b, err := msgpack.Marshal(v)
	if err != nil {
		t.Fatalf("msgpack.Marshal: %v", err)
	}
	return b
}

// unpack decodes b with the reference decoder into generic values.
func unpack(t testing.TB, b []byte) map[string]any {
	t.Helper()
	var m map[string]any
	if err := msgpack.Unmarshal(b, &m); err != nil {
		t.Fatalf("msgpack.Unmarshal: %v", err)
	}
	return m
}

// axis returns n evenly spaced wavenumbers from 200 cm-1 in steps of 1.5.
func axis(n int) []float64 {
	w := make([]float64, n)
	for i := range w {
		w[i] = 200 + 1.5*float64(i)
	}
	return w
}

// intensities returns n deterministic positive values.
func intensities(n int) []float64 {
	v := make([]float64, n)
	for i := range v {
		v[i] = 1000 + float64(i%97)*3.25
	}
	return v
}

// predictEnvelope returns a well-formed predict request as an ordered map
// whose body can be replaced.
func predictEnvelope(id string, body any) ordered {
	return ordered{"v", 1, "type", "predict", "id", id, "ts", 1.7e9, "body", body}
}

func predictBody(w, x any) ordered {
	return ordered{
		"spectrum", ordered{"wavenumbers", w, "intensities", x, "channel", 2, "integration_ms", 50.0, "scan_seq", 17},
		"context", ordered{"batch_id", "B-7", "port", "P1", "column_index", 3},
	}
}
