package main

import (
	"fmt"
	"sync"
	"time"
)

// runWorkers runs c.workers goroutines per board, each creating c.per
// tickets with create(board, title), and returns the wall time of the
// whole workload, or the first error.
func runWorkers(c config, boards []int64, create func(board int64, title string) error) (time.Duration, error) {
	start := time.Now()
	errs := make(chan error, len(boards)*c.workers)
	var wg sync.WaitGroup
	for _, board := range boards {
		for w := range c.workers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := range c.per {
					if err := create(board, fmt.Sprintf("worker %d ticket %d", w, i)); err != nil {
						errs <- err
						return
					}
				}
			}()
		}
	}
	wg.Wait()
	elapsed := time.Since(start)
	close(errs)
	return elapsed, <-errs
}
