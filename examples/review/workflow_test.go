// Package review holds the CI examples of the plan review; its test checks
// that the GitHub Actions workflows follow the safe pattern for pull
// requests from forks (see the review guide, "In CI").
package review

import (
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/rhysd/actionlint"
	"gopkg.in/yaml.v3"
)

type workflow struct {
	On          yaml.Node            `yaml:"on"`
	Permissions yaml.Node            `yaml:"permissions"`
	Jobs        map[string]yaml.Node `yaml:"jobs"`
}

type job struct {
	If          string    `yaml:"if"`
	Permissions yaml.Node `yaml:"permissions"`
	Uses        yaml.Node `yaml:"uses"` // a reusable workflow
	Steps       []step    `yaml:"steps"`
}

type step struct {
	Uses yaml.Node         `yaml:"uses"`
	Run  string            `yaml:"run"`
	With map[string]string `yaml:"with"`
}

// pinned: owner/repo[/path]@ a full commit SHA, with the tag in a comment.
var (
	pinned  = regexp.MustCompile(`^[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+(/[^@]+)?@[0-9a-f]{40}$`)
	tagNote = regexp.MustCompile(`^# v[0-9]+(\.[0-9]+)*$`)
)

// sameRepo is the condition that keeps a job from pull requests of forks.
const sameRepo = "github.event.pull_request.head.repo.full_name == github.repository"

func workflows(t *testing.T) map[string]workflow {
	t.Helper()
	files, err := filepath.Glob("github-actions*.yml")
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 {
		t.Fatal("no github-actions*.yml here")
	}
	out := map[string]workflow{}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var w workflow
		if err := yaml.Unmarshal(b, &w); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		out[f] = w
	}
	return out
}

func triggers(n yaml.Node) []string {
	switch n.Kind {
	case yaml.ScalarNode:
		return []string{n.Value}
	case yaml.SequenceNode:
		var s []string
		for _, c := range n.Content {
			s = append(s, c.Value)
		}
		return s
	case yaml.MappingNode:
		var s []string
		for i := 0; i < len(n.Content); i += 2 {
			s = append(s, n.Content[i].Value)
		}
		return s
	}
	return nil
}

// permissions reads a permissions block: nil when absent, an empty map for
// {}, and "*" for the read-all and write-all shorthands.
func permissions(t *testing.T, where string, n yaml.Node) map[string]string {
	t.Helper()
	switch n.Kind {
	case 0:
		return nil
	case yaml.ScalarNode:
		return map[string]string{"*": n.Value}
	case yaml.MappingNode:
		p := map[string]string{}
		if err := n.Decode(&p); err != nil {
			t.Fatalf("%s: permissions: %v", where, err)
		}
		return p
	}
	t.Fatalf("%s: permissions is neither a map nor a shorthand", where)
	return nil
}

func hasCheckout(j job) bool {
	for _, s := range j.Steps {
		if strings.HasPrefix(s.Uses.Value, "actions/checkout@") {
			return true
		}
	}
	return false
}

// Every action and reusable workflow is pinned by a full commit SHA (a tag
// or branch can be moved to other code), with its tag in a comment.
func TestWorkflowActionsPinned(t *testing.T) {
	for f, w := range workflows(t) {
		for name, n := range w.Jobs {
			var j job
			if err := n.Decode(&j); err != nil {
				t.Fatalf("%s: job %s: %v", f, name, err)
			}
			uses := []yaml.Node{j.Uses}
			for _, s := range j.Steps {
				uses = append(uses, s.Uses)
			}
			for _, u := range uses {
				if u.Value == "" {
					continue
				}
				if !pinned.MatchString(u.Value) {
					t.Errorf("%s:%d: job %s uses %q: pin it by a full commit SHA", f, u.Line, name, u.Value)
				} else if !tagNote.MatchString(u.LineComment) {
					t.Errorf("%s:%d: job %s uses %s without its tag in a comment (# vX.Y.Z)", f, u.Line, name, u.Value)
				}
			}
		}
	}
}

// Code from a pull request gets no credentials it could steal, and a
// workflow that holds a write token runs no code from a pull request.
func TestWorkflowForkSafe(t *testing.T) {
	ws := workflows(t)
	var sawPlan, sawPrivileged bool
	files := make([]string, 0, len(ws))
	for f := range ws {
		files = append(files, f)
	}
	sort.Strings(files)
	for _, f := range files {
		w := ws[f]
		on := triggers(w.On)
		if slices.Contains(on, "pull_request_target") {
			t.Errorf("%s: pull_request_target runs with a write token and secrets beside a pull request: use pull_request, and workflow_run for what must write", f)
		}
		// No grant for the whole workflow: each job says what it needs.
		if top := permissions(t, f, w.Permissions); top == nil || len(top) != 0 {
			t.Errorf("%s: top-level permissions must be {} (each job grants its own), got %v", f, top)
		}
		prCode := slices.Contains(on, "pull_request")
		privileged := slices.Contains(on, "workflow_run")
		sawPlan = sawPlan || prCode
		sawPrivileged = sawPrivileged || privileged
		for name, n := range w.Jobs {
			var j job
			if err := n.Decode(&j); err != nil {
				t.Fatalf("%s: job %s: %v", f, name, err)
			}
			raw, err := yaml.Marshal(&n)
			if err != nil {
				t.Fatal(err)
			}
			where := f + ": job " + name
			perms := permissions(t, where, j.Permissions)
			if perms == nil {
				t.Errorf("%s: no permissions block: it gets the workflow's", where)
				perms = permissions(t, f, w.Permissions)
			}
			if _, ok := perms["*"]; ok {
				t.Errorf("%s: permissions %s: grant each scope by name", where, perms["*"])
			}
			if strings.Contains(string(raw), "secrets.") {
				t.Errorf("%s: reads a secret", where)
			}
			for _, s := range j.Steps {
				if strings.HasPrefix(s.Uses.Value, "actions/checkout@") && s.With["persist-credentials"] != "false" {
					t.Errorf("%s: checkout leaves the token in .git/config: set persist-credentials: false", where)
				}
			}
			switch {
			case prCode:
				// The pull request's code, and its copy of this file: read
				// the repository, and an OIDC token only for the
				// repository's own branches (a role that trusts only this
				// repository's pull_request tokens).
				for scope, level := range perms {
					switch {
					case level == "read" && scope == "contents", level == "none":
					case scope == "id-token" && level == "write":
						if !strings.Contains(j.If, sameRepo) {
							t.Errorf("%s: id-token: write without `if: %s`: a fork's code would get the role", where, sameRepo)
						}
					default:
						t.Errorf("%s: %s: %s: a job running pull request code may only read the repository (and get an OIDC token for this repository's branches)", where, scope, level)
					}
				}
			case privileged:
				// A write token, the default branch's copy of the file: no
				// code of the pull request, no OIDC token, no shell.
				allowed := map[string]string{"actions": "read", "pull-requests": "write", "issues": "write", "statuses": "write"}
				for scope, level := range perms {
					if allowed[scope] != level && level != "none" {
						t.Errorf("%s: %s: %s: not needed to read an artifact and post a comment and a status", where, scope, level)
					}
				}
				if hasCheckout(j) {
					t.Errorf("%s: checks out code in a workflow that holds a write token", where)
				}
				for _, s := range j.Steps {
					if s.Run != "" {
						t.Errorf("%s: runs a shell step in a workflow that holds a write token: keep it to pinned actions", where)
					}
				}
			}
		}
	}
	if !sawPlan || !sawPrivileged {
		t.Errorf("want a pull_request workflow (the plan) and a workflow_run workflow (the comment): pull_request %v, workflow_run %v", sawPlan, sawPrivileged)
	}
}

// The plan run's artifact and the comment workflow agree: the comment
// workflow waits for the plan workflow by its name, downloads the artifact
// the plan job uploads, and takes no pull request number from it.
func TestWorkflowSplitAgrees(t *testing.T) {
	plan, err := os.ReadFile("github-actions.yml")
	if err != nil {
		t.Fatal(err)
	}
	comment, err := os.ReadFile("github-actions-comment.yml")
	if err != nil {
		t.Fatal(err)
	}
	var p, c struct {
		Name string    `yaml:"name"`
		On   yaml.Node `yaml:"on"`
	}
	if err := yaml.Unmarshal(plan, &p); err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(comment, &c); err != nil {
		t.Fatal(err)
	}
	var on struct {
		WorkflowRun struct {
			Workflows []string `yaml:"workflows"`
		} `yaml:"workflow_run"`
	}
	if err := c.On.Decode(&on); err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(on.WorkflowRun.Workflows, p.Name) {
		t.Errorf("the comment workflow waits for %v, the plan workflow is named %q", on.WorkflowRun.Workflows, p.Name)
	}
	for _, want := range []string{"name: review", "review.md", "code"} {
		if !strings.Contains(string(plan), want) || !strings.Contains(string(comment), want) {
			t.Errorf("both workflows should name the artifact's %q", want)
		}
	}
	if !strings.Contains(string(comment), "p.head.sha === run.head_sha") {
		t.Error("the comment workflow must find the pull request from the run's head commit, not from the artifact")
	}
}

// No artifact carries the plan: the plan file and its JSON hold sensitive
// values in clear, and artifacts are readable by whoever can read the
// repository's runs.
func TestWorkflowNoPlanArtifact(t *testing.T) {
	for f, w := range workflows(t) {
		for name, n := range w.Jobs {
			var j job
			if err := n.Decode(&j); err != nil {
				t.Fatal(err)
			}
			for _, s := range j.Steps {
				if !strings.HasPrefix(s.Uses.Value, "actions/upload-artifact@") {
					continue
				}
				p := s.With["path"]
				if strings.Contains(p, "plan") || slices.Contains([]string{".", "./", "platform", "platform/"}, p) {
					t.Errorf("%s: job %s uploads %q: keep the plan and the working folder out of artifacts", f, name, p)
				}
			}
		}
	}
}

// actionlint: syntax, expressions (untrusted input in scripts included),
// job dependencies, runner labels, action inputs it knows.
func TestWorkflowActionlint(t *testing.T) {
	files, err := filepath.Glob("github-actions*.yml")
	if err != nil {
		t.Fatal(err)
	}
	l, err := actionlint.NewLinter(io.Discard, &actionlint.LinterOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		errs, err := l.LintFile(f, nil)
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		for _, e := range errs {
			t.Errorf("%s:%d:%d: %s [%s]", f, e.Line, e.Column, e.Message, e.Kind)
		}
	}
}
