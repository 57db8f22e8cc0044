// Package s3 runs a real S3 server for tests: versitygw (built by make tools into
// _output/bin) serving a temporary directory on a loopback port, with one bucket. It is
// stopped when the test ends and killed with the test binary.
//
// Without the binary the tests skip, except under CI (CI=true), where that is a failure.
package s3

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"time"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"

	"github.com/mysqlop/mysql-operator/pkg/agentapi"
	"github.com/mysqlop/mysql-operator/pkg/backup/storage"
	"github.com/mysqlop/mysql-operator/test/framework"
	"github.com/mysqlop/mysql-operator/test/proc"
)

// Credentials of the server's root account.
const (
	AccessKey = "mysqlop-test"
	SecretKey = "mysqlop-test-Secret-Pa55"
	Bucket    = "backups"
)

// T is the part of testing.TB the helper uses.
type T interface {
	Helper()
	Fatalf(format string, args ...any)
	Skipf(format string, args ...any)
	TempDir() string
	Cleanup(func())
}

// Server is a running versitygw.
type Server struct {
	// Endpoint is the server's http:// URL.
	Endpoint string
	// Dir is the directory the objects are stored in.
	Dir string
}

// Start runs a server with bucket Bucket on a loopback port.
func Start(t T) *Server {
	t.Helper()
	return StartOn(t, "127.0.0.1")
}

// StartOn is Start on an address of host (such as a pod bridge's, for pods to reach).
func StartOn(t T, host string) *Server {
	t.Helper()
	bin := filepath.Join(framework.RepoRoot(), "_output", "bin", "versitygw")
	if _, err := os.Stat(bin); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("%s missing: CI must run make tools", bin)
		}
		t.Skipf("%s missing (make tools)", bin)
	}
	dir := t.TempDir()
	data := filepath.Join(dir, "data")
	if err := os.MkdirAll(data, 0o755); err != nil {
		t.Fatalf("%v", err)
	}
	port, err := proc.FreePort()
	if err != nil {
		t.Fatalf("%v", err)
	}
	addr := net.JoinHostPort(host, fmt.Sprint(port))
	log, err := os.Create(filepath.Join(dir, "versitygw.log"))
	if err != nil {
		t.Fatalf("%v", err)
	}
	cmd := exec.Command(bin, "--port", addr, "posix", data)
	// versitygw reads its root account from the environment; these are test-only values.
	cmd.Env = append(os.Environ(), "ROOT_ACCESS_KEY="+AccessKey, "ROOT_SECRET_KEY="+SecretKey)
	cmd.Stdout, cmd.Stderr = log, log
	if err := proc.Start(cmd); err != nil {
		t.Fatalf("start versitygw: %v", err)
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); log.Close(); close(done) }()
	t.Cleanup(func() { proc.Terminate(cmd.Process, done, 10*time.Second) })
	deadline := time.Now().Add(15 * time.Second)
	for {
		if c, err := net.DialTimeout("tcp", addr, time.Second); err == nil {
			c.Close()
			break
		}
		select {
		case <-done:
			b, _ := os.ReadFile(filepath.Join(dir, "versitygw.log"))
			t.Fatalf("versitygw exited:\n%s", b)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("versitygw not listening on %s", addr)
		}
		time.Sleep(50 * time.Millisecond)
	}
	s := &Server{Endpoint: "http://" + addr, Dir: data}
	client, err := minio.New(addr, &minio.Options{Creds: credentials.NewStaticV4(AccessKey, SecretKey, ""), BucketLookup: minio.BucketLookupPath})
	if err != nil {
		t.Fatalf("%v", err)
	}
	if err := client.MakeBucket(context.Background(), Bucket, minio.MakeBucketOptions{}); err != nil {
		t.Fatalf("make bucket: %v", err)
	}
	return s
}

// Config returns a storage configuration for the server's bucket under prefix.
// AgentConfig is Config as an agent request carries it.
func (s *Server) AgentConfig(prefix string) agentapi.StorageConfig {
	c := s.Config(prefix)
	return agentapi.StorageConfig{Endpoint: c.Endpoint, Region: c.Region, Bucket: c.Bucket, Prefix: c.Prefix, ForcePathStyle: c.ForcePathStyle,
		AccessKeyID: c.AccessKeyID, SecretAccessKey: c.SecretAccessKey}
}

// Config is the storage configuration of the server's bucket under prefix.
func (s *Server) Config(prefix string) storage.Config {
	return storage.Config{Endpoint: s.Endpoint, Bucket: Bucket, Prefix: prefix, ForcePathStyle: true, Region: "us-east-1",
		AccessKeyID: AccessKey, SecretAccessKey: SecretKey}
}
