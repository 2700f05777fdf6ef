//go:build !race

package sqlitelog_test

// raceDetector: see race_on_test.go.
const raceDetector = false
