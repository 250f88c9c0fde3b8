// Command nodehost is a minimal Pulumi language host for Node.js, built by
// the end-to-end tests as pulumi-language-nodejs. It is test code: the real
// host (github.com/pulumi/pulumi/sdk/nodejs/cmd/pulumi-language-nodejs/v3)
// does not resolve on the Go module proxy these machines can reach.
//
// Only the launcher is ours. Like the real host, it runs the program with
// the run script of the program's own @pulumi/pulumi package
// (node_modules/@pulumi/pulumi/cmd/run), which talks to the real engine's
// resource monitor; the program, the Node.js SDK, the engine and the
// provider are the real ones. It does not install dependencies, compile
// TypeScript (the program's package.json "main" must point at compiled
// JavaScript), report plugins or answer `pulumi about`.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"

	pulumirpc "github.com/pulumi/pulumi/sdk/v3/proto/go"
	"google.golang.org/grpc"
	"google.golang.org/protobuf/types/known/emptypb"
)

// userActionableExit is the run script's exit code after it has reported the
// error itself (nodeJSProcessExitedAfterLoggingUserActionableMessage).
const userActionableExit = 32

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "pulumi-language-nodejs (test host):", err)
		os.Exit(1)
	}
}

func run() error {
	// The engine passes -root=DIR, the project's runtime options as
	// -key=value flags, and the engine's address last.
	h := &host{}
	for _, a := range os.Args[1:] {
		if !strings.HasPrefix(a, "-") {
			h.engine = a
		}
	}
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return fmt.Errorf("listening: %w", err)
	}
	srv := grpc.NewServer()
	pulumirpc.RegisterLanguageRuntimeServer(srv, h)
	// The engine reads the port from the first line of stdout.
	fmt.Printf("%d\n", lis.Addr().(*net.TCPAddr).Port)
	return srv.Serve(lis)
}

type host struct {
	pulumirpc.UnimplementedLanguageRuntimeServer
	engine string
}

func (h *host) GetPluginInfo(context.Context, *emptypb.Empty) (*pulumirpc.PluginInfo, error) {
	return &pulumirpc.PluginInfo{Version: "0.0.0-test"}, nil
}

// The provider plugin is on PATH; the engine loads it when a resource needs it.
func (h *host) GetRequiredPlugins(context.Context, *pulumirpc.GetRequiredPluginsRequest) (*pulumirpc.GetRequiredPluginsResponse, error) {
	return &pulumirpc.GetRequiredPluginsResponse{}, nil
}

func (h *host) GetRequiredPackages(context.Context, *pulumirpc.GetRequiredPackagesRequest) (*pulumirpc.GetRequiredPackagesResponse, error) {
	return &pulumirpc.GetRequiredPackagesResponse{}, nil
}

// Run runs the program as the real host does: the run script of the
// program's @pulumi/pulumi, with the monitor and engine addresses, and the
// configuration in PULUMI_CONFIG.
func (h *host) Run(ctx context.Context, req *pulumirpc.RunRequest) (*pulumirpc.RunResponse, error) {
	dir := req.GetPwd()
	if info := req.GetInfo(); info != nil && info.GetProgramDirectory() != "" {
		dir = info.GetProgramDirectory()
	}
	script, err := runScript(dir)
	if err != nil {
		return &pulumirpc.RunResponse{Error: err.Error()}, nil
	}
	args := []string{script,
		"--monitor", req.GetMonitorAddress(),
		"--engine", h.engine,
		"--organization", req.GetOrganization(),
		"--project", req.GetProject(),
		"--stack", req.GetStack(),
		"--pwd", req.GetPwd(),
		"--parallel", strconv.Itoa(int(req.GetParallel())),
	}
	if req.GetDryRun() {
		args = append(args, "--dry-run")
	}
	program := req.GetInfo().GetEntryPoint() // the engine sends the deprecated Program field the same value
	if program == "" {
		program = "."
	}
	args = append(args, program)
	args = append(args, req.GetArgs()...)

	cfg, err := json.Marshal(req.GetConfig())
	if err != nil {
		return nil, err
	}
	secrets, err := json.Marshal(req.GetConfigSecretKeys())
	if err != nil {
		return nil, err
	}
	cmd := exec.CommandContext(ctx, "node", args...)
	cmd.Dir = req.GetPwd()
	cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
	cmd.Env = append(os.Environ(),
		"PULUMI_CONFIG="+string(cfg),
		"PULUMI_CONFIG_SECRET_KEYS="+string(secrets),
		"PULUMI_NODEJS_TYPESCRIPT=false",
	)
	if err := cmd.Run(); err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			if ee.ExitCode() == userActionableExit {
				return &pulumirpc.RunResponse{Bail: true}, nil
			}
			return &pulumirpc.RunResponse{Error: fmt.Sprintf("program exited with code %d", ee.ExitCode())}, nil
		}
		return &pulumirpc.RunResponse{Error: fmt.Sprintf("running node: %v", err)}, nil
	}
	return &pulumirpc.RunResponse{}, nil
}

// runScript finds @pulumi/pulumi's run script as node resolves the package
// from dir: in node_modules of dir or of its nearest ancestor having one.
func runScript(dir string) (string, error) {
	for d := dir; ; d = filepath.Dir(d) {
		p := filepath.Join(d, "node_modules", "@pulumi", "pulumi", "cmd", "run")
		if _, err := os.Stat(filepath.Join(p, "index.js")); err == nil {
			return p, nil
		}
		if filepath.Dir(d) == d {
			return "", fmt.Errorf("@pulumi/pulumi is not installed for %s: run npm install", dir)
		}
	}
}
