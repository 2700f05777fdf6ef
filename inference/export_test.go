package inference

import "io"

// WriteNPY writes a float64 array in the .npy format of the artifact
// (tests hand spectra to NumPy with it).
func WriteNPY(w io.Writer, shape []int, data []float64) error { return writeNPY(w, shape, data) }
