package kubetest

import (
	"bytes"
	"io"
	"sync"
)

// tail keeps the most recent output of the control plane's processes, each
// line prefixed with its process, to show when a test fails.
type tail struct {
	max int
	mu  sync.Mutex
	buf []byte
}

func newTail(max int) *tail { return &tail{max: max} }

func (b *tail) write(p []byte) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.buf = append(b.buf, p...)
	if over := len(b.buf) - b.max; over > 0 {
		b.buf = append(b.buf[:0], b.buf[over:]...)
	}
}

// String returns what is kept.
func (b *tail) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return string(b.buf)
}

// Tail returns the last n bytes kept, from a line's start where it can.
func (b *tail) Tail(n int) string {
	b.mu.Lock()
	defer b.mu.Unlock()
	s := b.buf
	if len(s) > n {
		s = s[len(s)-n:]
		if i := bytes.IndexByte(s, '\n'); i >= 0 {
			s = s[i+1:]
		}
	}
	return string(s)
}

// Prefixed returns a writer that adds whole lines to b, each after prefix.
func (b *tail) Prefixed(prefix string) io.Writer {
	return &prefixWriter{to: b, prefix: []byte(prefix)}
}

type prefixWriter struct {
	to      *tail
	prefix  []byte
	mu      sync.Mutex
	partial []byte
}

func (w *prefixWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.partial = append(w.partial, p...)
	for {
		i := bytes.IndexByte(w.partial, '\n')
		if i < 0 {
			break
		}
		line := make([]byte, 0, len(w.prefix)+i+1)
		line = append(append(line, w.prefix...), w.partial[:i+1]...)
		w.to.write(line)
		w.partial = w.partial[i+1:]
	}
	if len(w.partial) > 64<<10 { // a line without end: keep it anyway
		w.to.write(append(append([]byte{}, w.prefix...), append(w.partial, '\n')...))
		w.partial = nil
	}
	return len(p), nil
}
