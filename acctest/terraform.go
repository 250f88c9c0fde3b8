package acctest

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
)

// TerraformInstallVersion is the Terraform release installed with go install
// when no terraform binary is found (the newest that go-installs).
const TerraformInstallVersion = "v1.8.5"

// FindTerraform returns the Terraform CLI to run acceptance tests with, in
// this order: $TF_ACC_TERRAFORM_PATH; /usr/local/bin/terraform; terraform on
// PATH; a copy installed earlier in the cache; else it installs
// TerraformInstallVersion with go install into the cache (a few minutes, once).
// The cache is $MLPLATFORM_CACHE_DIR, else the user cache directory
// (os.UserCacheDir()/mlplatform).
func FindTerraform(ctx context.Context) (string, error) {
	if p := os.Getenv("TF_ACC_TERRAFORM_PATH"); p != "" {
		if err := executable(p); err != nil {
			return "", fmt.Errorf("TF_ACC_TERRAFORM_PATH: %w", err)
		}
		return p, nil
	}
	if p := "/usr/local/bin/terraform"; runtime.GOOS != "windows" && executable(p) == nil {
		return p, nil
	}
	if p, err := exec.LookPath("terraform"); err == nil {
		return filepath.Abs(p)
	}
	dir, err := terraformCacheDir()
	if err != nil {
		return "", err
	}
	bin := filepath.Join(dir, "terraform")
	if runtime.GOOS == "windows" {
		bin += ".exe"
	}
	if executable(bin) == nil {
		return bin, nil
	}
	if err := installTerraform(ctx, dir); err != nil {
		return "", err
	}
	if err := executable(bin); err != nil {
		return "", fmt.Errorf("installing terraform: %w", err)
	}
	return bin, nil
}

func terraformCacheDir() (string, error) {
	base := os.Getenv("MLPLATFORM_CACHE_DIR")
	if base == "" {
		ucd, err := os.UserCacheDir()
		if err != nil {
			return "", fmt.Errorf("finding a cache directory for terraform (set MLPLATFORM_CACHE_DIR): %w", err)
		}
		base = filepath.Join(ucd, "mlplatform")
	}
	return filepath.Join(base, "terraform", TerraformInstallVersion), nil
}

// installTerraform runs go install github.com/hashicorp/terraform@VERSION
// with GOBIN=dir.
func installTerraform(ctx context.Context, dir string) error {
	goBin, err := exec.LookPath("go")
	if err != nil {
		// go test puts its GOROOT/bin first on PATH; else $GOROOT/bin/go.
		goroot := os.Getenv("GOROOT")
		goBin = filepath.Join(goroot, "bin", "go")
		if goroot == "" || executable(goBin) != nil {
			return fmt.Errorf("installing terraform: no terraform found and no go command to install it: %w", err)
		}
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("installing terraform: %w", err)
	}
	cmd := exec.CommandContext(ctx, goBin, "install", "github.com/hashicorp/terraform@"+TerraformInstallVersion)
	// Outside any module, so that the project's go.mod plays no part.
	cmd.Dir = os.TempDir()
	cmd.Env = append(os.Environ(), "GOBIN="+dir, "GOFLAGS=", "GOWORK=off", "CGO_ENABLED=0")
	out, err := cmd.CombinedOutput()
	if err != nil {
		return fmt.Errorf("installing terraform %s with go install: %w\n%s", TerraformInstallVersion, err, out)
	}
	return nil
}

func executable(p string) error {
	fi, err := os.Stat(p)
	if err != nil {
		return err
	}
	if fi.IsDir() {
		return fmt.Errorf("%s is a directory", p)
	}
	if runtime.GOOS != "windows" && fi.Mode()&0o111 == 0 {
		return fmt.Errorf("%s: %w", p, fs.ErrPermission)
	}
	return nil
}

// TerraformEnv returns the environment terraform-plugin-testing needs to run
// acceptance tests with the Terraform CLI at path.
func TerraformEnv(path string) map[string]string {
	return map[string]string{
		"TF_ACC":                "1",
		"TF_ACC_TERRAFORM_PATH": path,
		"CHECKPOINT_DISABLE":    "1",
		"TF_IN_AUTOMATION":      "1",
	}
}
