//go:build !race

package inference_test

// raceDetector: see race_on_test.go.
const raceDetector = false
