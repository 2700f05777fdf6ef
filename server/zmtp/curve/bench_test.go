package curve

import "testing"

// BenchmarkServerPredictCrypto is the server's CURVE cost of one 2048-point
// predict from a REQ client: open the request's delimiter and its 37 KiB
// body, seal the reply's delimiter and a 512-byte body.
func BenchmarkServerPredictCrypto(b *testing.B) {
	p := newParties(b, 20)
	cs, ss := handshake(b, p, nil)
	request := make([]byte, 37<<10)
	delim, _ := cs.Seal(nil, FlagMore, nil)
	body, _ := cs.Seal(nil, 0, request)
	reply := make([]byte, 512)
	plain := make([]byte, 0, len(request)+1)
	out := make([]byte, 0, 2*MessageOverhead+len(reply))
	received := ss.peerNonce
	b.SetBytes(int64(len(request)))
	b.ReportAllocs()
	for b.Loop() {
		ss.peerNonce = received // the same two messages, opened afresh
		if _, _, err := ss.Open(plain[:0], delim); err != nil {
			b.Fatal(err)
		}
		if _, _, err := ss.Open(plain[:0], body); err != nil {
			b.Fatal(err)
		}
		out, _ = ss.Seal(out[:0], FlagMore, nil)
		out, _ = ss.Seal(out, 0, reply)
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/1e3, "us/predict")
}

// BenchmarkHandshake is the server's cost of one CURVE handshake (the
// client's included: both run here).
func BenchmarkHandshake(b *testing.B) {
	p := newParties(b, 21)
	b.ReportAllocs()
	for b.Loop() {
		handshake(b, p, nil)
	}
}
