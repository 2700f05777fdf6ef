package opcua

import (
	"encoding/binary"
	"net"
	"runtime"
	"testing"
	"time"

	"github.com/gopcua/opcua/ua"
)

// 1,000 connections that send a Hello and nothing more, all held open:
// the gate keeps at most MaxConnections of them, evicting the oldest
// still in its handshake, and a real client connects at once afterwards.
func TestHelloFloodLeavesRoomForAClient(t *testing.T) {
	f := start(t, nil)
	limit := f.srv.opts.Gate
	limit.fill()
	hello := binary.LittleEndian.AppendUint32(nil, 0)
	for range 4 {
		hello = binary.LittleEndian.AppendUint32(hello, 65535)
	}
	hello = str(hello, []byte(f.endpointURL()))
	msg := append([]byte("HELF"), 0, 0, 0, 0)
	binary.LittleEndian.PutUint32(msg[4:], uint32(headerLen+len(hello)))
	msg = append(msg, hello...)

	var before runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	const flood = 1000
	conns := make([]net.Conn, 0, flood)
	defer func() {
		for _, c := range conns {
			c.Close()
		}
	}()
	for range flood {
		c, err := net.DialTimeout("tcp", f.srv.Addr().String(), wait)
		if err != nil {
			t.Fatal(err)
		}
		conns = append(conns, c)
		c.SetWriteDeadline(time.Now().Add(wait))
		if _, err := c.Write(msg); err != nil {
			t.Fatal(err)
		}
	}
	deadline := time.Now().Add(wait)
	for f.srv.Stats().Gate.Accepted < flood && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	st := f.srv.Stats().Gate
	if st.Accepted != flood || st.Open > limit.MaxConnections || st.Evicted < flood-uint64(limit.MaxConnections) {
		t.Fatalf("after %d Hello-only connections: %+v, want all accepted, at most %d open, the rest evicted", flood, st, limit.MaxConnections)
	}
	var during runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&during)
	began := time.Now()
	c, err := f.dial(t, "None", ua.MessageSecurityModeNone, "", "")
	if err != nil {
		t.Fatalf("a client after the flood: %v", err)
	}
	took := time.Since(began)
	if _, err := c.Read(t.Context(), &ua.ReadRequest{NodesToRead: []*ua.ReadValueID{{NodeID: f.nodeID("ramanserve/Server/Ready"), AttributeID: ua.AttributeIDValue}}}); err != nil {
		t.Fatal(err)
	}
	t.Logf("after %d Hello-only connections (%d open, %d evicted): a client connected in %v; heap in use grew %d KiB",
		flood, st.Open, st.Evicted, took, (int64(during.HeapInuse)-int64(before.HeapInuse))/1024)
}
