package acctest

import (
	"context"
	"fmt"
	"os"
	"sync"
)

// NewNodePlayerFor is NewNodePlayer outside a Go test: the emulator
// command's --play-nodes mode uses it to stand in for the nodes of a
// demo's GPU clusters. hwprobe is a built hwprobe binary, dir a scratch
// directory and logf where the player reports what each node ran. Like
// the rest of the player it is test code: the identity documents it signs
// are trusted only by a configuration given signer's certificate. mach is
// the nodes' CPU: a fixed machine description (which needs hwprobe's test
// build) or HostMachine.
func NewNodePlayerFor(h *Harness, signer *NodeSigner, hwprobe, dir, mach string, logf func(format string, args ...any)) *NodePlayer {
	return &NodePlayer{H: h, Signer: signer, Hwprobe: hwprobe, Dir: dir, Machine: mach, Logf: logf, played: map[string]bool{}, nth: map[int]int{}}
}

// PlayNodes plays every new running node of each named cluster until ctx
// ends. The player's AWS clients read the harness environment (Env), so
// the caller's process must have it: SetEnv does that for a command.
func PlayNodes(ctx context.Context, p *NodePlayer, clusters []string) {
	var wg sync.WaitGroup
	for _, c := range clusters {
		wg.Add(1)
		go func() {
			defer wg.Done()
			p.Watch(ctx, c)
		}()
	}
	wg.Wait()
}

// SetEnv sets the harness environment (Env) in this process, for a
// command that runs fixture clients or the node player outside a test.
func (h *Harness) SetEnv() error {
	for k, v := range h.Env() {
		if err := os.Setenv(k, v); err != nil {
			return fmt.Errorf("setting %s: %w", k, err)
		}
	}
	return nil
}
