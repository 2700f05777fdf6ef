package client_test

import (
	"context"
	"fmt"
	"io"
	"log"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"ramanserve/app"
	"ramanserve/client"
	"ramanserve/gen"
	"ramanserve/trainer/synth"
)

// The examples run against a real server started here on 127.0.0.1, with
// one trained model active.
var (
	managementURL      string // e.g. "http://localhost:5556"
	predictionEndpoint string // e.g. "tcp://localhost:5555"
)

func TestMain(m *testing.M) {
	os.Exit(runWithServer(m))
}

func runWithServer(m *testing.M) int {
	dir, err := os.MkdirTemp("", "client-example-")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	proc, err := app.Start(context.Background(), app.Config{
		HTTPAddr: "127.0.0.1:0", ZMQEndpoint: "tcp://127.0.0.1:0", RegistryDir: filepath.Join(dir, "registry"),
	})
	if err != nil {
		log.Fatal(err)
	}
	defer func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		proc.Shutdown(ctx)
	}()
	managementURL = "http://" + proc.HTTPAddr()
	predictionEndpoint = proc.ZMQEndpoint()
	if err := activateModel(); err != nil {
		log.Fatal(err)
	}
	return m.Run()
}

// activateModel trains a model on synthetic spectra and loads it.
func activateModel() error {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	m, err := client.NewManagement(managementURL)
	if err != nil {
		return err
	}
	job, err := m.StartTraining(ctx, gen.TrainingMeta{Operator: "setup"}, syntheticCSV(ctx, 1))
	if err != nil {
		return err
	}
	done, err := waitForJob(ctx, m, job.JobId)
	if err != nil {
		return err
	}
	load, err := m.LoadModelWithResponse(ctx, nil, gen.LoadModelJSONRequestBody{Version: done.Result.NewVersion})
	if err != nil {
		return err
	}
	return client.HTTPError(load.HTTPResponse, load.Body)
}

// syntheticCSV streams a synthetic training set of 120 spectra.
func syntheticCSV(ctx context.Context, seed uint64) io.Reader {
	pr, pw := io.Pipe()
	go func() {
		pw.CloseWithError(synth.New(synth.Config{Seed: seed}).WriteCSV(ctx, pw, 120))
	}()
	return pr
}

func waitForJob(ctx context.Context, m *client.Management, id string) (*gen.TrainingJob, error) {
	for {
		res, err := m.GetTrainingJobWithResponse(ctx, id)
		if err != nil {
			return nil, err
		}
		if err := client.HTTPError(res.HTTPResponse, res.Body); err != nil {
			return nil, err
		}
		switch res.JSON200.Status {
		case gen.Done:
			return res.JSON200, nil
		case gen.Failed:
			return nil, fmt.Errorf("job %s failed: %s", id, res.JSON200.Error.Code)
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// A training set is streamed from any io.Reader: here a synthetic CSV
// written by a goroutine, never held in memory as a whole.
func ExampleManagement_StartTraining() {
	ctx := context.Background()
	m, err := client.NewManagement(managementURL)
	if err != nil {
		log.Fatal(err)
	}
	pr, pw := io.Pipe()
	go func() {
		pw.CloseWithError(synth.New(synth.Config{Seed: 7}).WriteCSV(ctx, pw, 120))
	}()
	notes := "nightly retrain"
	job, err := m.StartTraining(ctx, gen.TrainingMeta{Operator: "jdoe", SourceBatches: &[]string{"B-7"}, Notes: &notes}, pr)
	if err != nil {
		log.Fatal(err)
	}
	for {
		res, err := m.GetTrainingJobWithResponse(ctx, job.JobId)
		if err != nil {
			log.Fatal(err)
		}
		if s := res.JSON200.Status; s == gen.Done || s == gen.Failed {
			fmt.Println("training", s)
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	// Output: training done
}

// A refusal comes back as *client.Error with the contract's code.
func ExampleManagement_StartTraining_refused() {
	m, err := client.NewManagement(managementURL)
	if err != nil {
		log.Fatal(err)
	}
	_, err = m.StartTraining(context.Background(), gen.TrainingMeta{Operator: ""}, strings.NewReader("scan_id\n"))
	if e, ok := err.(*client.Error); ok {
		fmt.Println(e.Status, e.Code, e.Retryable)
	}
	// Output: 400 INVALID_METADATA false
}

// Every endpoint is the generated client's; HTTPError turns an answer
// outside 2xx into *client.Error.
func ExampleHTTPError() {
	m, err := client.NewManagement(managementURL)
	if err != nil {
		log.Fatal(err)
	}
	res, err := m.GetTrainingJobWithResponse(context.Background(), "no-such-job")
	if err != nil {
		log.Fatal(err)
	}
	if err := client.HTTPError(res.HTTPResponse, res.Body); err != nil {
		e := err.(*client.Error)
		fmt.Println(e.Status, e.Code, e.Retryable)
	}
	// Output: 404 JOB_NOT_FOUND false
}

func ExamplePredictionClient_Ping() {
	ctx := context.Background()
	c, err := client.DialPrediction(ctx, predictionEndpoint, client.PredictionOptions{Timeout: 2 * time.Second})
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()
	pong, err := c.Ping(ctx)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("protocol", pong.ProtocolVersion, "model loaded:", pong.ModelVersion != "")
	// Output: protocol 1 model loaded: true
}

func ExamplePredictionClient_Predict() {
	ctx := context.Background()
	c, err := client.DialPrediction(ctx, predictionEndpoint, client.PredictionOptions{Timeout: 2 * time.Second, Retries: 2})
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()
	scan := synth.New(synth.Config{Seed: 3}).Next()
	pr, err := c.Predict(ctx, &client.Spectrum{Wavenumbers: synth.Axis(), Intensities: scan.Intensities, Channel: 1, IntegrationMS: 500},
		&client.ScanContext{BatchID: "B-7", Port: "P1"})
	if err != nil {
		log.Fatal(err)
	}
	for i, analyte := range client.AnalyteNames() {
		if pr.Concentrations.Valid[i] {
			fmt.Printf("%s predicted\n", analyte)
		}
	}
	// Output:
	// EPA predicted
	// DHA predicted
	// DPA predicted
}

// A failed predict is answered as a predict_reply with its error set; the
// client returns that error as *client.Error.
func ExamplePredictionClient_Predict_invalidSpectrum() {
	ctx := context.Background()
	c, err := client.DialPrediction(ctx, predictionEndpoint, client.PredictionOptions{Timeout: 2 * time.Second})
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()
	_, err = c.Predict(ctx, &client.Spectrum{Wavenumbers: []float64{1, 2, 3}, Intensities: []float64{1, 2}}, nil)
	if e, ok := err.(*client.Error); ok {
		fmt.Println(e.Code, e.Retryable)
	}
	// Output: INVALID_SPECTRUM false
}
