//go:build race

package inference_test

// raceDetector is true when the tests run with -race, which makes
// training several times slower: the heaviest studies are shortened.
const raceDetector = true
