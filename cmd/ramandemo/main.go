// Command ramandemo shows ramanserve end to end against a running server:
// it uploads a synthetic training set, follows the job's progress, loads
// the staged model and sends a few predictions over the prediction
// channel, printing them next to the true concentrations.
//
//	go run ./cmd/ramandemo -http http://localhost:5556 -zmq tcp://localhost:5555
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"mime/multipart"
	"net/http"
	"net/textproto"
	"os"
	"strings"
	"time"

	"github.com/go-zeromq/zmq4"
	"github.com/google/uuid"

	"ramanserve/gen"
	"ramanserve/server/codec"
	"ramanserve/trainer/synth"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "ramandemo:", err)
		os.Exit(1)
	}
}

func run() error {
	httpBase := flag.String("http", "http://localhost:5556", "management base URL")
	zmqEndpoint := flag.String("zmq", "tcp://localhost:5555", "prediction channel endpoint")
	samples := flag.Int("samples", 300, "synthetic training samples to upload")
	predictions := flag.Int("predictions", 5, "predictions to send")
	seed := flag.Uint64("seed", uint64(time.Now().Unix()), "synthetic data seed")
	flag.Parse()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()

	client, err := gen.NewClientWithResponses(strings.TrimRight(*httpBase, "/"))
	if err != nil {
		return err
	}
	health, err := client.GetHealthWithResponse(ctx)
	if err != nil {
		return fmt.Errorf("is the server running (make run)? %w", err)
	}
	if health.JSON200 == nil {
		return fmt.Errorf("health: %d %s", health.StatusCode(), health.Body)
	}
	fmt.Printf("server %s is %s\n", deref(health.JSON200.ServerVersion), health.JSON200.Status)

	// 1. Upload a synthetic training set.
	var csv bytes.Buffer
	if err := synth.New(synth.Config{Seed: *seed}).WriteCSV(ctx, &csv, *samples); err != nil {
		return err
	}
	fmt.Printf("uploading %d synthetic spectra (%.1f MB)\n", *samples, float64(csv.Len())/1e6)
	job, err := upload(ctx, *httpBase, csv.Bytes())
	if err != nil {
		return err
	}

	// 2. Follow the job.
	var done *gen.TrainingJob
	for done == nil {
		res, err := client.GetTrainingJobWithResponse(ctx, job.JobId)
		if err != nil {
			return err
		}
		if res.JSON200 == nil {
			return fmt.Errorf("training job: %d %s", res.StatusCode(), res.Body)
		}
		j := res.JSON200
		bar := strings.Repeat("#", int(j.Progress*30)) + strings.Repeat(".", 30-int(j.Progress*30))
		fmt.Printf("\rtraining %s [%s] %3.0f%%", j.Status, bar, j.Progress*100)
		switch j.Status {
		case gen.Done:
			done = j
		case gen.Failed:
			fmt.Println()
			return fmt.Errorf("training failed: %s %s", j.Error.Code, j.Error.Message)
		default:
			time.Sleep(200 * time.Millisecond)
		}
	}
	fmt.Printf("\nnew model %s (cross-validated RMSE EPA %.2f, DHA %.2f, DPA %.2f g/L)\n", done.Result.NewVersion,
		num(done.Result.Metrics.Rmse.EPA), num(done.Result.Metrics.Rmse.DHA), num(done.Result.Metrics.Rmse.DPA))

	// 3. Activate it.
	load, err := client.LoadModelWithResponse(ctx, gen.LoadModelJSONRequestBody{Version: done.Result.NewVersion})
	if err != nil {
		return err
	}
	if load.JSON200 == nil {
		return fmt.Errorf("load: %d %s", load.StatusCode(), load.Body)
	}
	fmt.Printf("loaded %s in %d ms (previous: %q)\n", load.JSON200.LoadedVersion, load.JSON200.LoadTimeMs, load.JSON200.PreviousVersion)

	// 4. Predict over the prediction channel.
	sock := zmq4.NewReq(ctx, zmq4.WithDialerTimeout(5*time.Second))
	defer sock.Close()
	if err := sock.Dial(*zmqEndpoint); err != nil {
		return fmt.Errorf("dial %s: %w", *zmqEndpoint, err)
	}
	fmt.Printf("\n%-10s %-26s %-26s %s\n", "", "predicted EPA/DHA/DPA", "true EPA/DHA/DPA", "confidence")
	g := synth.New(synth.Config{Seed: *seed + 1})
	for i := 0; i < *predictions; i++ {
		s := g.Next()
		frame := codec.AppendPredictRequest(nil, uuid.NewString(), codec.Unix(time.Now()),
			&codec.Spectrum{Wavenumbers: synth.Axis(), Intensities: s.Intensities, Channel: 1, IntegrationMS: 500, ScanSeq: int64(i)}, nil)
		if err := sock.Send(zmq4.NewMsg(frame)); err != nil {
			return err
		}
		msg, err := sock.Recv()
		if err != nil {
			return err
		}
		rep, err := codec.DecodeReply(msg.Bytes())
		if err != nil {
			return err
		}
		if rep.Error != nil {
			return fmt.Errorf("predict: %s: %s", rep.Error.Code, rep.Error.Message)
		}
		pr, err := codec.DecodePredictReply(rep.Body)
		if err != nil {
			return err
		}
		c, cf := pr.Concentrations.Value, pr.Confidence.Value
		fmt.Printf("scan %-5d %7.2f %7.2f %7.2f    %7.2f %7.2f %7.2f    %.2f %.2f %.2f  (%.3f ms)\n", i,
			c[0], c[1], c[2], s.Conc[0], s.Conc[1], s.Conc[2], cf[0], cf[1], cf[2], pr.InferenceMS)
	}
	return nil
}

// upload streams the CSV and meta as multipart/form-data.
func upload(ctx context.Context, base string, csv []byte) (*gen.TrainingJobAccepted, error) {
	var body bytes.Buffer
	mw := multipart.NewWriter(&body)
	h := textproto.MIMEHeader{}
	h.Set("Content-Disposition", `form-data; name="meta"`)
	h.Set("Content-Type", "application/json")
	w, _ := mw.CreatePart(h)
	w.Write([]byte(`{"operator":"demo","source_batches":["synthetic"],"notes":"make demo"}`))
	fw, _ := mw.CreateFormFile("csv", "training.csv")
	fw.Write(csv)
	if err := mw.Close(); err != nil {
		return nil, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, strings.TrimRight(base, "/")+"/training/start", &body)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", mw.FormDataContentType())
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusAccepted {
		return nil, fmt.Errorf("upload: %d %s", resp.StatusCode, b)
	}
	var acc gen.TrainingJobAccepted
	if err := json.Unmarshal(b, &acc); err != nil {
		return nil, errors.Join(errors.New("upload reply"), err)
	}
	return &acc, nil
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

func num(f *float64) float64 {
	if f == nil {
		return 0
	}
	return *f
}
