//go:build !race

package predlog_test

// raceDetector: see race_on_test.go.
const raceDetector = false
