//go:build race

package sqlitelog_test

// raceDetector is true when the tests run with -race, which makes the
// writer about thirty times slower: the longest streams are shortened.
const raceDetector = true
