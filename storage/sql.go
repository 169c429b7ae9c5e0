package storage

import "strings"

// placeholders is the package's one builder of repeated SQL text: n copies
// of fragment joined by sep, such as the rows of a multi-row INSERT,
// placeholders("(?, ?, ?)", ", ", n), or an IN list, placeholders("?", ", ", n).
// Only fixed fragments go in; values always travel as arguments.
func placeholders(fragment, sep string, n int) string {
	if n <= 0 {
		return ""
	}
	var b strings.Builder
	b.Grow(n*len(fragment) + (n-1)*len(sep))
	b.WriteString(fragment)
	for range n - 1 {
		b.WriteString(sep)
		b.WriteString(fragment)
	}
	return b.String()
}
