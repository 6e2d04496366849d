package profiler

import (
	"slices"
	"sort"
)

// genIndex maps every retired thread generation to the row that holds its
// counts (retire.go), for Delta to find where a thread that vanished
// between two snapshots went. It only grows, 8 bytes a thread, and
// snapshots share it: a snapshot holds the index as it was (its chunks
// slice), and retire appends chunks past that length or merges them into
// new ones, never changing a chunk a snapshot can see. So Delta may read a
// snapshot's index while the session takes the next snapshot.
type genIndex struct {
	chunks [][]genRow // each sorted by gen
}

type genRow struct{ gen, row uint32 }

// mergeEvery: past this many chunks, the next add merges them all into
// one, so that a lookup searches a few chunks whatever the run's length.
const mergeEvery = 32

// with is the index with the pairs of one retire call added (sorted
// here); idx itself is unchanged.
func (idx genIndex) with(pairs []genRow) genIndex {
	if len(pairs) == 0 {
		return idx
	}
	sort.Slice(pairs, func(i, j int) bool { return pairs[i].gen < pairs[j].gen })
	if len(idx.chunks) < mergeEvery {
		// A fresh backing array: appending in place would be safe for
		// readers of shorter slices, but two indexes grown from the
		// same one must not share it.
		chunks := make([][]genRow, len(idx.chunks), len(idx.chunks)+1)
		copy(chunks, idx.chunks)
		return genIndex{chunks: append(chunks, pairs)}
	}
	n := len(pairs)
	for _, c := range idx.chunks {
		n += len(c)
	}
	all := make([]genRow, 0, n)
	for _, c := range idx.chunks {
		all = append(all, c...)
	}
	all = append(all, pairs...)
	sort.Slice(all, func(i, j int) bool { return all[i].gen < all[j].gen })
	return genIndex{chunks: [][]genRow{all}}
}

// row is the row gen went to, if it was retired.
func (idx genIndex) row(gen uint32) (uint32, bool) {
	for _, c := range slices.Backward(idx.chunks) { // the latest retirements first
		i := sort.Search(len(c), func(i int) bool { return c[i].gen >= gen })
		if i < len(c) && c[i].gen == gen {
			return c[i].row, true
		}
	}
	return 0, false
}
