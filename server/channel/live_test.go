package channel_test

import (
	"context"
	"testing"

	"ramanserve/client"
	"ramanserve/platform/race"
	"ramanserve/server/channel"
	"ramanserve/server/zmtp"
	"ramanserve/service/live"
	"ramanserve/trainer/synth"
)

// Every predict's outcome reaches the live feed: a prediction with its
// model, a refused spectrum as a failure with its code, both on their
// port; a request that did not decode on the channel's slot only.
func TestLiveFeedGetsEveryOutcome(t *testing.T) {
	feed := live.NewFeed(0)
	h := channel.New(channel.Options{Models: models{trainedModel(t, "v7")}, ServerVersion: "test", Live: feed})
	s := synth.New(synth.Config{Seed: 5}).Next()
	ok := client.AppendPredictRequest(nil, "id-1", 1, &client.Spectrum{Wavenumbers: synth.Axis(), Intensities: s.Intensities}, &client.ScanContext{Port: "P1"})
	if rep := handle(h, ok); rep.Error != nil {
		t.Fatal(rep.Error)
	}
	got := feed.Take(nil)
	if len(got) != 2 || got[1].Source != "P1" || got[1].Outcome.Failed || got[1].Outcome.ModelVersion != "v7" || !got[1].Outcome.Prediction.Concentrations.Valid[0] {
		t.Fatalf("after a prediction the feed holds %+v", got)
	}
	short := client.AppendPredictRequest(nil, "id-2", 1, &client.Spectrum{Wavenumbers: synth.Axis()[:10], Intensities: s.Intensities[:10]}, &client.ScanContext{Port: "P1"})
	if rep := handle(h, short); rep.Error == nil {
		t.Fatal("a 10-point spectrum was predicted")
	}
	got = feed.Take(nil)
	if len(got) != 2 || got[1].Source != "P1" || !got[1].Outcome.Failed || got[1].Outcome.ErrorCode != "INVALID_SPECTRUM" {
		t.Fatalf("after a refused spectrum the feed holds %+v", got)
	}
	if rep := handle(h, []byte{0x81, 0xa4, 't', 'y', 'p', 'e', 0xa7, 'p', 'r', 'e', 'd', 'i', 'c', 't'}); rep.Error == nil {
		t.Fatal("a predict without a body succeeded")
	}
	got = feed.Take(nil)
	if len(got) != 1 || got[0].Source != "" || !got[0].Outcome.Failed {
		t.Fatalf("after a request that did not decode the feed holds %+v", got)
	}
}

// The feed costs a warmed-up predict no allocation.
func TestLiveFeedAllocatesNothing(t *testing.T) {
	if race.Enabled {
		// The race detector's sync.Pool drops objects at random, so a
		// count of allocations means nothing under it.
		t.Skip("allocation counts are not stable under -race")
	}
	m := trainedModel(t, "v7")
	s := synth.New(synth.Config{Seed: 5}).Next()
	req := client.AppendPredictRequest(nil, "id-1", 1, &client.Spectrum{Wavenumbers: synth.Axis(), Intensities: s.Intensities, Channel: 2}, &client.ScanContext{})
	allocs := func(feed channel.LiveFeed) float64 {
		h := channel.New(channel.Options{Models: models{m}, ServerVersion: "test", Live: feed})
		dst := make([]byte, 0, 4096)
		frames := [][]byte{req}
		dst = h.Handle(context.Background(), zmtp.Request{Frames: frames}, dst[:0])
		return testing.AllocsPerRun(50, func() { dst = h.Handle(context.Background(), zmtp.Request{Frames: frames}, dst[:0]) })
	}
	without, with := allocs(nil), allocs(live.NewFeed(0))
	if with != without {
		t.Fatalf("a predict allocates %v times with the live feed, %v without", with, without)
	}
}

// BenchmarkPredict2048Live is BenchmarkPredict2048 with the live feed (an
// OPC UA server's hand-off; nothing reads it here, so every outcome after
// the first is coalesced).
func BenchmarkPredict2048Live(b *testing.B) {
	feed := live.NewFeed(0)
	benchPredictLive(b, feed)
	b.ReportMetric(float64(feed.Stats().Coalesced)/float64(b.N), "coalesced/predict")
}
