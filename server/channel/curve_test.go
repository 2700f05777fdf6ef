package channel_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"os"
	"os/exec"
	"testing"
	"time"

	"ramanserve/client"
	"ramanserve/inference"
	"ramanserve/server/channel"
	"ramanserve/server/zmtp"
	"ramanserve/server/zmtp/curve"
	"ramanserve/trainer"
	"ramanserve/trainer/synth"
)

// TestCurvePyzmqPingAndPredict2048 drives the channel handler behind the
// ZMTP server with CURVE on from a real libzmq CURVE client (pyzmq): a
// ping gets its pong and a 2048-point predict its prediction, the same
// one the handler gives without the transport.
func TestCurvePyzmqPingAndPredict2048(t *testing.T) {
	const py = "/usr/bin/python3"
	if _, err := os.Stat(py); err != nil {
		t.Skipf("%s not installed", py)
	}
	ds := synth.New(synth.Config{Seed: 4}).Dataset(60)
	res, err := trainer.Train(context.Background(), ds, trainer.Options{Seed: 1}, nil)
	if err != nil {
		t.Fatal(err)
	}
	res.Params.Meta.Version = "curve-test"
	model, err := inference.NewPLSModel(res.Params, inference.ModelOptions{})
	if err != nil {
		t.Fatal(err)
	}
	h := channel.New(channel.Options{Models: models{model}, ServerVersion: "v-test"})

	serverPub, serverSec, err := curve.GenerateKeyPair(nil)
	if err != nil {
		t.Fatal(err)
	}
	clientPub, clientSec, err := curve.GenerateKeyPair(nil)
	if err != nil {
		t.Fatal(err)
	}
	allow := curve.NewAllowlist([]curve.PublicKey{clientPub})
	srv, err := zmtp.Listen("tcp://127.0.0.1:0", zmtp.Config{Curve: &zmtp.CurveConfig{Secret: serverSec, Allow: allow.Allowed}}, h)
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = srv.Serve(context.Background()) }()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		_ = srv.Shutdown(ctx)
	})

	s := synth.New(synth.Config{Seed: 5}).Next()
	if len(s.Intensities) != 2048 {
		t.Fatalf("synthetic spectrum of %d points", len(s.Intensities))
	}
	predict := client.AppendPredictRequest(nil, "predict-1", 1,
		&client.Spectrum{Wavenumbers: synth.Axis(), Intensities: s.Intensities, Channel: 1, IntegrationMS: 500, ScanSeq: 1}, nil)
	ping := client.AppendPingRequest(nil, "ping-1", 1)
	secret, err := curve.EncodeZ85(clientSec[:])
	if err != nil {
		t.Fatal(err)
	}
	job, err := json.Marshal(map[string]any{
		"endpoint":   "tcp://" + srv.Addr().String(),
		"server_key": serverPub.String(),
		"public":     clientPub.String(),
		"secret":     secret,
		"requests":   []string{base64.StdEncoding.EncodeToString(ping), base64.StdEncoding.EncodeToString(predict)},
	})
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(py, "../zmtp/testdata/pyzmq_curve.py")
	cmd.Stdin = bytes.NewReader(job)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("pyzmq client: %v\n%s", err, stderr.String())
	}
	var result struct {
		Replies []*string `json:"replies"`
	}
	if err := json.Unmarshal(out, &result); err != nil {
		t.Fatalf("pyzmq output %q: %v", out, err)
	}
	if len(result.Replies) != 2 || result.Replies[0] == nil || result.Replies[1] == nil {
		t.Fatalf("replies %v", result.Replies)
	}
	reply := func(i int) *client.Reply {
		raw, err := base64.StdEncoding.DecodeString(*result.Replies[i])
		if err != nil {
			t.Fatal(err)
		}
		rep, err := client.DecodeReply(raw)
		if err != nil {
			t.Fatalf("reply %d: %v", i, err)
		}
		if rep.Error != nil {
			t.Fatalf("reply %d: error %+v", i, rep.Error)
		}
		return rep
	}
	if pong := reply(0); pong.Type != "pong" || pong.CorrelationID != "ping-1" {
		t.Fatalf("ping answered with %s for %q", pong.Type, pong.CorrelationID)
	}
	got := reply(1)
	if got.Type != "predict_reply" || got.CorrelationID != "predict-1" {
		t.Fatalf("predict answered with %s for %q", got.Type, got.CorrelationID)
	}
	overCurve, err := client.DecodePredictReply(got.Body)
	if err != nil {
		t.Fatal(err)
	}
	direct, err := client.DecodePredictReply(handle(h, predict).Body)
	if err != nil {
		t.Fatal(err)
	}
	if overCurve.ModelVersion != "curve-test" || overCurve.Concentrations != direct.Concentrations || overCurve.Concentrations.Valid != [3]bool{true, true, true} {
		t.Fatalf("prediction over CURVE %+v (model %s), directly %+v", overCurve.Concentrations, overCurve.ModelVersion, direct.Concentrations)
	}
	if st := srv.Stats(); st.HandshakesCompleted != 1 || st.RequestsServed != 2 {
		t.Fatalf("stats %+v", st)
	}
}
