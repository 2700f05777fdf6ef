package opcua

import (
	"context"
	"testing"
	"time"

	"github.com/gopcua/opcua"
	"github.com/gopcua/opcua/id"
	"github.com/gopcua/opcua/ua"

	"ramanserve/inference"
	"ramanserve/server/opcua/opcuatest"
	"ramanserve/service/live"
)

// browseAll walks the ramanserve folder and returns every path under it.
func browseAll(t *testing.T, c *opcua.Client, start *ua.NodeID) []string {
	t.Helper()
	ctx := context.Background()
	var paths []string
	queue := []*ua.NodeID{start}
	for len(queue) > 0 && len(paths) < 1000 {
		n := queue[0]
		queue = queue[1:]
		res, err := c.Browse(ctx, &ua.BrowseRequest{NodesToBrowse: []*ua.BrowseDescription{{
			NodeID: n, BrowseDirection: ua.BrowseDirectionForward,
			ReferenceTypeID: ua.NewNumericNodeID(0, id.HierarchicalReferences), IncludeSubtypes: true,
			ResultMask: uint32(ua.BrowseResultMaskAll),
		}}})
		if err != nil {
			t.Fatalf("browse %s: %v", n, err)
		}
		if res.Results[0].StatusCode != ua.StatusOK {
			t.Fatalf("browse %s: %s", n, res.Results[0].StatusCode)
		}
		for _, r := range res.Results[0].References {
			if r.NodeID.NodeID.Type() != ua.NodeIDTypeString || r.NodeID.NodeID.Namespace() != start.Namespace() && start.Namespace() != 0 {
				continue // only this server's namespace
			}
			paths = append(paths, r.NodeID.NodeID.StringID())
			if start.Namespace() != 0 {
				queue = append(queue, r.NodeID.NodeID)
			}
		}
	}
	return paths
}

func outcomeAt(i int, src time.Time) *live.Outcome {
	o := &live.Outcome{Source: src, Replied: src.Add(2 * time.Millisecond), ModelVersion: "v1"}
	p := &o.Prediction
	for a := range inference.NumAnalytes {
		p.Concentrations.Set(inference.Analyte(a), float64(i)+float64(a)/10)
		p.Confidence.Set(inference.Analyte(a), 0.9)
	}
	p.Diagnostics = inference.Diagnostics{HasT2: true, ReducedT2: 0.2, HasQ: true, HasQLim: true, ReducedQ: 0.3}
	return o
}

// The address space, its units, and 100 outcomes seen in order by a
// subscription at 100 ms, with their status and source time.
func TestSubscriptionSeesEveryOutcomeInOrder(t *testing.T) {
	f := start(t, nil)
	for _, sec := range []struct {
		policy string
		mode   ua.MessageSecurityMode
	}{{"None", ua.MessageSecurityModeNone}, {"Basic256Sha256", ua.MessageSecurityModeSignAndEncrypt}} {
		t.Run(sec.policy, func(t *testing.T) {
			if testing.Short() && sec.policy == "None" {
				// 100 publishes of about 100 ms each: the inner loop
				// (make test-quick) runs the secure policy only, whose
				// path includes this one's; make test runs both.
				t.Skip("-short: Basic256Sha256 covers it")
			}
			c, err := f.dial(t, sec.policy, sec.mode, "", "")
			if err != nil {
				t.Fatal(err)
			}
			if top := browseAll(t, c, ua.NewNumericNodeID(0, id.ObjectsFolder)); len(top) != 1 || top[0] != "ramanserve" {
				t.Fatalf("Objects holds %q of this server, want the ramanserve folder", top)
			}
			paths := browseAll(t, c, f.nodeID("ramanserve"))
			want := map[string]bool{
				"ramanserve/Analytes/EPA/Value": false, "ramanserve/Analytes/DHA/Confidence": false,
				"ramanserve/Analytes/DPA/ModelVersion": false, "ramanserve/Analytes/EPA/Value/EngineeringUnits": false,
				"ramanserve/Diagnostics/T2Reduced": false, "ramanserve/Diagnostics/QReduced": false,
				"ramanserve/Diagnostics/LastErrorCode": false, "ramanserve/Server/ActiveModelVersion": false,
				"ramanserve/Server/ShadowModelVersion": false, "ramanserve/Server/Ready": false,
			}
			for _, p := range paths {
				if _, ok := want[p]; ok {
					want[p] = true
				}
			}
			for p, seen := range want {
				if !seen {
					t.Errorf("browsing did not find %s (found %d nodes)", p, len(paths))
				}
			}
			ctx := context.Background()
			rr, err := c.Read(ctx, &ua.ReadRequest{NodesToRead: []*ua.ReadValueID{
				{NodeID: f.nodeID("ramanserve/Analytes/EPA/Value/EngineeringUnits"), AttributeID: ua.AttributeIDValue},
			}})
			if err != nil {
				t.Fatal(err)
			}
			eo, _ := rr.Results[0].Value.Value().(*ua.ExtensionObject)
			eu, _ := eo.Value.(*ua.EUInformation)
			if eu == nil || eu.DisplayName.Text != "g/L" {
				t.Fatalf("EngineeringUnits = %#v, want g/L", rr.Results[0].Value.Value())
			}

			notes := make(chan *opcua.PublishNotificationData, 256)
			sub, err := c.Subscribe(ctx, &opcua.SubscriptionParameters{Interval: 100 * time.Millisecond}, notes)
			if err != nil {
				t.Fatal(err)
			}
			defer sub.Cancel(ctx)
			if _, err := sub.Monitor(ctx, ua.TimestampsToReturnBoth,
				opcua.NewMonitoredItemCreateRequestWithDefaults(f.nodeID("ramanserve/Analytes/EPA/Value"), ua.AttributeIDValue, 1)); err != nil {
				t.Fatal(err)
			}
			next := func() *ua.DataValue {
				t.Helper()
				dc, err := opcuatest.NextDataChange(notes, wait)
				if err != nil {
					t.Fatal(err)
				}
				return dc.MonitoredItems[len(dc.MonitoredItems)-1].Value
			}
			next() // the value at the time of monitoring
			base := time.Now().Add(-time.Hour).Truncate(time.Millisecond)
			for i := range 100 {
				o := outcomeAt(i, base.Add(time.Duration(i)*time.Second))
				want := ua.StatusOK
				switch i % 10 {
				case 3:
					o.Prediction.Diagnostics.ReducedQ = 4 // out of domain
					want = ua.StatusUncertainSensorNotAccurate
				case 7:
					o.Failed, o.ErrorCode, o.Prediction = true, "INVALID_SPECTRUM", inference.Prediction{}
					want = ua.StatusBadSensorFailure
				}
				f.feed.Offer("", o)
				dv := next()
				if dv.Status != want {
					t.Fatalf("outcome %d: status %s, want %s", i, dv.Status, want)
				}
				if !dv.SourceTimestamp.Equal(o.Source) {
					t.Fatalf("outcome %d: source time %v, want %v", i, dv.SourceTimestamp, o.Source)
				}
				if v, _ := dv.Value.Value().(float64); o.Failed && v != float64(i-1) || !o.Failed && v != float64(i) {
					t.Fatalf("outcome %d: value %v (a failure keeps the last good value)", i, v)
				}
			}
		})
	}
}
