package trainer

import "fmt"

// CSVError locates a problem in the training CSV. It unwraps to
// ErrInvalidCSV. Line and Column are 1-based; the header is line 1 and
// scan_id is column 1. Column is 0 when the problem concerns a whole line.
type CSVError struct {
	Line       int
	Column     int
	ColumnName string // contract name of the column, e.g. "wn_15"; may be empty
	Reason     string
}

func (e *CSVError) Error() string {
	switch {
	case e.Column == 0:
		return fmt.Sprintf("%v: line %d: %s", ErrInvalidCSV, e.Line, e.Reason)
	case e.ColumnName == "":
		return fmt.Sprintf("%v: line %d, column %d: %s", ErrInvalidCSV, e.Line, e.Column, e.Reason)
	default:
		return fmt.Sprintf("%v: line %d, column %d (%s): %s", ErrInvalidCSV, e.Line, e.Column, e.ColumnName, e.Reason)
	}
}

// Unwrap makes errors.Is(err, ErrInvalidCSV) true.
func (e *CSVError) Unwrap() error { return ErrInvalidCSV }

// DefaultFolds is the default number of cross-validation folds.
const DefaultFolds = 10

// MinRows is the smallest data set K-fold cross-validation accepts: K+2
// rows, so that every training part keeps at least K rows after its test
// fold (at most ceil(n/K) = 2 rows) is held out, and so that at least one
// component can be fitted and tested in every fold.
func MinRows(folds int) int { return folds + 2 }
