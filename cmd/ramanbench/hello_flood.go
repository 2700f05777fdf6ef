package main

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/url"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"ramanserve/client"
	"ramanserve/server/zmtp/curve"
	"ramanserve/server/zmtp/wire"
)

// helloFloodWorkers is how many threads send CURVE HELLOs in the flood.
const helloFloodWorkers = 16

// helloFloodSource is the flood's source address: another loopback
// address than the client's, so that the server's per-address HELLO limit
// tells them apart as it would two hosts.
const helloFloodSource = "127.0.0.2"

// helloFlood measures a CURVE client's predict latency with and without
// helloFloodWorkers threads sending HELLOs (all they need is the server's
// public key) from another address, alternating blocks so that both see
// the same machine. It prints p50 and p95 of each.
func helloFlood(ctx context.Context, b curveBench, srv *curveServer, curveOpts *client.CurveOptions, serverPub curve.PublicKey) error {
	c, err := client.DialPrediction(ctx, srv.endpoint, client.PredictionOptions{Timeout: 5 * time.Second, Retries: -1, Curve: curveOpts})
	if err != nil {
		return err
	}
	defer c.Close()
	u, err := url.Parse(srv.endpoint)
	if err != nil {
		return err
	}
	var quiet, flooded []time.Duration
	var hellos atomic.Int64
	k := 0
	run := func(n int, into *[]time.Duration) error {
		for range n {
			t0 := time.Now()
			if _, err := c.Predict(ctx, &b.spectra[k%len(b.spectra)], nil); err != nil {
				return err
			}
			k++
			if into != nil {
				*into = append(*into, time.Since(t0))
			}
		}
		return nil
	}
	if err := run(warmUp, nil); err != nil {
		return err
	}
	for end := time.Now().Add(b.duration); time.Now().Before(end); {
		if err := run(curveBlock, &quiet); err != nil {
			return err
		}
		floodCtx, stop := context.WithCancel(ctx)
		var wg sync.WaitGroup
		for range helloFloodWorkers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				sendHellos(floodCtx, u.Host, serverPub, &hellos)
			}()
		}
		err := run(curveBlock, &flooded)
		stop()
		wg.Wait()
		if err != nil {
			return fmt.Errorf("under the flood: %w", err)
		}
	}
	slices.Sort(quiet)
	slices.Sort(flooded)
	fmt.Printf("\nCURVE HELLO flood: %d threads from %s (%d HELLOs sent), a Go CURVE client from 127.0.0.1, alternating blocks of %d predicts\n",
		helloFloodWorkers, helloFloodSource, hellos.Load(), curveBlock)
	fmt.Printf("  without the flood: p50 %s p95 %s (%d predicts)\n", us(pct(quiet, 0.50)), us(pct(quiet, 0.95)), len(quiet))
	fmt.Printf("  with the flood:    p50 %s p95 %s (%d predicts) (goal: p95 <= 3ms)\n", us(pct(flooded, 0.50)), us(pct(flooded, 0.95)), len(flooded))
	return nil
}

// sendHellos connects to addr from helloFloodSource again and again until
// ctx ends, each time sending a CURVE greeting and a HELLO and reading
// what comes back (a WELCOME, or ERROR once the limit applies).
func sendHellos(ctx context.Context, addr string, serverPub curve.PublicKey, sent *atomic.Int64) {
	// One HELLO, sent again and again, as an attacker would: it costs
	// the attacker nothing more, and the server as much each time.
	hello, err := curve.NewClient(serverPub, curve.PublicKey{}, curve.SecretKey{}, nil).Hello()
	if err != nil {
		return
	}
	msg := wire.AppendGreeting(nil, "CURVE", false)
	msg = wire.AppendHeader(msg, wire.FlagCommand, len(hello))
	msg = append(msg, hello...)
	d := net.Dialer{Timeout: time.Second, LocalAddr: &net.TCPAddr{IP: net.ParseIP(helloFloodSource)}}
	buf := make([]byte, 512)
	for ctx.Err() == nil {
		conn, err := d.DialContext(ctx, "tcp", addr)
		if err != nil {
			continue
		}
		_ = conn.SetDeadline(time.Now().Add(time.Second))
		if _, err := conn.Write(msg); err == nil {
			sent.Add(1)
			_, _ = io.ReadAtLeast(conn, buf, wire.GreetingSize+8)
		}
		_ = conn.Close()
	}
}
