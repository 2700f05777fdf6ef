package main

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"time"

	"github.com/gopcua/opcua"
	"github.com/gopcua/opcua/ua"

	"ramanserve/client"
	"ramanserve/server"
	opcuasrv "ramanserve/server/opcua"
	"ramanserve/trainer"
)

// opcuaBench measures what the OPC UA server costs the prediction
// channel: the same model in two ramanserve processes, one without
// -opcua-addr and one with it and subscribers watching every variable of
// the channel at 100 ms; closed-loop predicts alternate between them in
// blocks, and each configuration's p95 is pooled over its blocks.
type opcuaBench struct {
	dir, serverBin string
	duration       time.Duration
	blocks         int
	subscribers    int
	model          *trainer.Result
	spectra        []client.Spectrum
}

func (b opcuaBench) run(ctx context.Context) error {
	if b.serverBin == "" {
		return fmt.Errorf("-opcua measures ramanserve processes: give -server bin/ramanserve")
	}
	procs := make([]*serverProcess, 2)
	opcPort, err := freePort()
	if err != nil {
		return err
	}
	url := fmt.Sprintf("opc.tcp://127.0.0.1:%d", opcPort)
	for i, extra := range [][]string{nil, {"-opcua-addr", url, "-opcua-allow-insecure"}} {
		regDir := filepath.Join(b.dir, fmt.Sprintf("registry-%d", i))
		proc, version, err := startWithModel(ctx, regDir, b.model, server.ChannelConfig{})
		if err != nil {
			return err
		}
		if err := proc.Shutdown(ctx); err != nil {
			return err
		}
		p, err := startServerProcess(ctx, b.serverBin, regDir, version, nil, extra...)
		if err != nil {
			return err
		}
		defer p.stop()
		procs[i] = p
	}
	notes := make(chan *opcua.PublishNotificationData, 4096)
	for range b.subscribers {
		c, err := subscribeAll(ctx, url, notes)
		if err != nil {
			return fmt.Errorf("opc ua subscriber: %w", err)
		}
		defer c.Close(context.Background())
	}
	var changes int
	stop := make(chan struct{})
	defer close(stop)
	go func() {
		for {
			select {
			case n := <-notes:
				if dc, ok := n.Value.(*ua.DataChangeNotification); ok {
					changes += len(dc.MonitoredItems)
				}
			case <-stop:
				return
			}
		}
	}()
	names := []string{"OPC UA off", fmt.Sprintf("OPC UA, %d subscribers", b.subscribers)}
	conns := make([][]*client.PredictionClient, 2)
	for i, p := range procs {
		if conns[i], err = dialClients(names[i], p.endpoint, 1, b.spectra, &client.ScanContext{Port: "P1"}); err != nil {
			return err
		}
		defer closeClients(conns[i])
	}
	fmt.Printf("OPC UA cost: one closed-loop client, %d blocks of %v per configuration, alternating; %d subscribers at 100 ms on every variable of the channel and of port P1\n",
		b.blocks, b.duration, b.subscribers)
	pooled := []*result{{server: names[0], clients: 1}, {server: names[1], clients: 1}}
	// Each block pair's own ratio too: the machine's pace drifts over
	// minutes (the p95 without OPC UA moved by a fifth between runs), and
	// a pair, seconds apart, shares most of that drift.
	var pairs []float64
	for range b.blocks {
		var p95 [2]time.Duration
		for i := range procs {
			r := closedLoop(names[i], conns[i], b.duration, b.spectra, &client.ScanContext{Port: "P1"})
			pooled[i].add(r)
			r.sort()
			p95[i] = r.percentile(0.95)
		}
		if p95[0] > 0 {
			pairs = append(pairs, float64(p95[1])/float64(p95[0]))
		}
	}
	slices.Sort(pairs)
	fmt.Printf("%-26s %9s %9s %9s %9s\n", "server", "requests", "p50", "p95", "p99")
	for _, r := range pooled {
		r.sort()
		fmt.Printf("%-26s %9d %9s %9s %9s\n", r.server, r.requests, us(r.percentile(0.50)), us(r.percentile(0.95)), us(r.percentile(0.99)))
	}
	fmt.Printf("p95 with OPC UA / without: %.3f (goal: at most 1.05)\n",
		float64(pooled[1].percentile(0.95))/float64(pooled[0].percentile(0.95)))
	if len(pairs) > 0 {
		fmt.Printf("the same per block pair: median %.3f, quartiles %.3f-%.3f over %d pairs\n",
			pairs[len(pairs)/2], pairs[len(pairs)/4], pairs[3*len(pairs)/4], len(pairs))
	}
	return nil
}

// subscribeAll connects an anonymous None client that subscribes at
// 100 ms to every variable of the channel's analytes and diagnostics and
// of port P1.
func subscribeAll(ctx context.Context, url string, notes chan *opcua.PublishNotificationData) (*opcua.Client, error) {
	c, err := opcua.NewClient(url, opcua.SecurityPolicy("None"), opcua.SecurityMode(ua.MessageSecurityModeNone), opcua.AuthAnonymous(), opcua.AutoReconnect(false))
	if err != nil {
		return nil, err
	}
	if err := c.Connect(ctx); err != nil {
		return nil, err
	}
	ns, err := c.FindNamespace(ctx, opcuasrv.NamespaceURI)
	if err != nil {
		return nil, err
	}
	sub, err := c.Subscribe(ctx, &opcua.SubscriptionParameters{Interval: 100 * time.Millisecond}, notes)
	if err != nil {
		return nil, err
	}
	var items []*ua.MonitoredItemCreateRequest
	for _, root := range []string{"ramanserve/Analytes/", "ramanserve/Ports/P1/"} {
		for _, a := range []string{"EPA", "DHA", "DPA"} {
			for _, v := range []string{"Value", "Confidence", "ModelVersion"} {
				items = append(items, opcua.NewMonitoredItemCreateRequestWithDefaults(ua.NewStringNodeID(ns, root+a+"/"+v), ua.AttributeIDValue, uint32(len(items)+1)))
			}
		}
	}
	for _, d := range []string{"T2Reduced", "QReduced", "LastErrorCode"} {
		items = append(items, opcua.NewMonitoredItemCreateRequestWithDefaults(ua.NewStringNodeID(ns, "ramanserve/Diagnostics/"+d), ua.AttributeIDValue, uint32(len(items)+1)))
	}
	if _, err := sub.Monitor(ctx, ua.TimestampsToReturnBoth, items...); err != nil {
		return nil, err
	}
	return c, nil
}
