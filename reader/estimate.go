package reader

import (
	"fmt"
	"math"
)

// FooterRowCount returns the sum of the row counts the footer states for
// the row groups rgs (every row group if rgs is empty). It is footer
// metadata, for planning only: a query planner's cardinality estimate, a
// progress bar. It must never answer a query nor gate a decision (SOP-PME-1
// Section 11.10): count the rows a Scan returns for that. A Scan checks each
// row group it reads against it, page by page, and fails (ErrFormat) when
// the pages hold another number of rows, so a scan that succeeds returned
// exactly these rows; the figure itself releases no value. An index out of
// range gives ErrRowGroup. The sum is capped at math.MaxInt64.
func (r *Reader) FooterRowCount(rgs ...int) (int64, error) {
	if len(rgs) == 0 {
		rgs = make([]int, r.nrg)
		for i := range rgs {
			rgs[i] = i
		}
	}
	var sum int64
	for _, i := range rgs {
		if i < 0 || i >= r.nrg {
			return 0, fmt.Errorf("%w: %d of %d", ErrRowGroup, i, r.nrg)
		}
		n := max(r.meta.RowGroup(i).NumRows(), 0) // Open refused negative counts
		if sum > math.MaxInt64-n {
			return math.MaxInt64, nil
		}
		sum += n
	}
	return sum, nil
}
