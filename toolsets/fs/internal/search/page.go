package search

import (
	"context"
	"sync/atomic"
)

// page cuts the sorted results down to the page opts asks for, re-reading
// the files of the page whose lines were not kept.
func (s *searcher) page(ctx context.Context, found []fileResult) (Result, error) {
	o := s.opts
	var res Result
	if o.Target == TargetFiles {
		res.Total = len(found)
		if o.Output != OutputCount {
			from, to := window(len(found), o.Offset, o.Limit)
			for _, f := range found[from:to] {
				res.Files = append(res.Files, File{Path: f.path})
			}
		}
		res.More = o.Limit > 0 && o.Offset+o.Limit < res.Total
		return res, nil
	}
	for _, f := range found {
		res.TotalMatches += f.count
	}
	if o.Output != OutputContent {
		res.Total = len(found)
		from, to := window(len(found), o.Offset, o.Limit)
		for _, f := range found[from:to] {
			res.Files = append(res.Files, File{Path: f.path, Matches: f.count})
		}
		res.More = o.Limit > 0 && o.Offset+o.Limit < res.Total
		return res, nil
	}
	res.Total = res.TotalMatches
	from, to := window(res.Total, o.Offset, o.Limit)
	seen := 0 // matches in the files before f
	for _, f := range found {
		if seen >= to {
			break
		}
		if seen+f.count > from {
			ms := f.matches
			if !f.kept {
				ms = s.reread(ctx, f)
			}
			lo, hi := max(from-seen, 0), min(to-seen, f.count)
			// The file may have changed since it was counted.
			hi = min(hi, len(ms))
			if lo < hi {
				res.Matches = append(res.Matches, ms[lo:hi]...)
			}
		}
		seen += f.count
	}
	res.More = o.Limit > 0 && o.Offset+o.Limit < res.Total
	return res, ctx.Err()
}

// reread searches one file again, keeping its lines.
func (s *searcher) reread(ctx context.Context, f fileResult) []Match {
	var kept atomic.Int64
	w := s.newWorker(ctx, nil, &kept)
	data, st := w.readPath(f.path)
	if st != readOK {
		return nil
	}
	ms := w.scan(data, true).matches
	for i := range ms {
		ms[i].Path = f.path
	}
	return ms
}

// window returns the bounds of the page [offset, offset+limit) within n items.
func window(n, offset, limit int) (int, int) {
	from := min(offset, n)
	to := n
	if limit > 0 {
		to = min(from+limit, n)
	}
	return from, to
}
