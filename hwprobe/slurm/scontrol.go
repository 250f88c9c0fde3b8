package slurm

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"time"
)

// DefaultCallTimeout bounds one scontrol call: a controller that does not
// answer must not hold the health check past slurmd's 60 s kill.
const DefaultCallTimeout = 10 * time.Second

// Scontrol runs scontrol against the configuration Config names.
type Scontrol struct {
	Path    string
	Config  Config
	Timeout time.Duration // per call; 0 is DefaultCallTimeout
}

func (s Scontrol) run(ctx context.Context, args ...string) (string, error) {
	t := s.Timeout
	if t <= 0 {
		t = DefaultCallTimeout
	}
	if dl, ok := ctx.Deadline(); ok && time.Until(dl) < t {
		t = max(time.Until(dl).Round(time.Millisecond), 0)
	}
	ctx, cancel := context.WithTimeout(ctx, t)
	defer cancel()
	cmd := exec.CommandContext(ctx, s.Path, args...)
	env := os.Environ()
	if s.Config.File != "" {
		env = append(env, "SLURM_CONF="+s.Config.File)
	}
	if s.Config.Server != "" {
		env = append(env, "SLURM_CONF_SERVER="+s.Config.Server)
	}
	cmd.Env = env
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	if ctx.Err() != nil {
		return out.String(), fmt.Errorf("scontrol %s: no answer within %s", strings.Join(args, " "), t)
	}
	if err != nil {
		msg := oneLine(errb.String() + " " + out.String())
		return out.String(), fmt.Errorf("scontrol %s: %w: %s", strings.Join(args, " "), err, msg)
	}
	return out.String(), nil
}

// ShowNode returns what the controller says about node name, or
// ErrNodeNotFound.
func (s Scontrol) ShowNode(ctx context.Context, name string) (Node, error) {
	out, err := s.run(ctx, "show", "node", name)
	if err != nil {
		if strings.Contains(err.Error(), "Node "+name+" not found") {
			return Node{}, fmt.Errorf("%s: %w", name, ErrNodeNotFound)
		}
		return Node{}, err
	}
	n, err := ParseNode(out)
	if err != nil {
		return Node{}, err
	}
	if n.Name != name {
		return Node{}, fmt.Errorf("scontrol show node %s answered for node %s", name, n.Name)
	}
	return n, nil
}

// Drain drains node name with reason.
func (s Scontrol) Drain(ctx context.Context, name, reason string) error {
	if !Ours(reason) {
		return fmt.Errorf("slurm: drain reason %q does not begin with %q: hwprobe drains only with reasons of its own", reason, ReasonPrefix)
	}
	_, err := s.run(ctx, "update", "nodename="+name, "state=drain", "reason="+reason)
	return err
}

// Resume resumes node name.
func (s Scontrol) Resume(ctx context.Context, name string) error {
	_, err := s.run(ctx, "update", "nodename="+name, "state=resume")
	return err
}

// Delete removes node name from the controller (a dynamic node:
// scontrol delete nodename=NAME). The controller refuses a node that runs
// jobs; ClassifyDelete reads its answer.
func (s Scontrol) Delete(ctx context.Context, name string) error {
	_, err := s.run(ctx, "delete", "nodename="+name)
	return err
}

// Down sets node name DOWN with reason, which must be hwprobe's: its jobs
// end or are requeued.
func (s Scontrol) Down(ctx context.Context, name, reason string) error {
	if !Ours(reason) {
		return fmt.Errorf("slurm: down reason %q does not begin with %q: hwprobe sets nodes down only with reasons of its own", reason, ReasonPrefix)
	}
	_, err := s.run(ctx, "update", "nodename="+name, "state=down", "reason="+reason)
	return err
}
