package storage_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"io"
	"strings"
	"testing"

	"github.com/mysqlop/mysql-operator/pkg/backup/storage"
	"github.com/mysqlop/mysql-operator/test/s3"
)

// Put, Get, Exists and Delete against a real S3 server, with an upload of several parts whose
// size the client does not know in advance.
func TestStoreOnVersityGW(t *testing.T) {
	srv := s3.Start(t)
	cfg := srv.Config("/team/db/")
	cfg.PartSize = 5 << 20
	st, err := storage.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	data := make([]byte, 12<<20)
	if _, err := rand.Read(data); err != nil {
		t.Fatal(err)
	}
	// io.MultiReader hides the length, as a pipe from a backup tool does.
	n, err := st.Put(ctx, "b1/backup.zst", io.MultiReader(bytes.NewReader(data)))
	if err != nil || n != int64(len(data)) {
		t.Fatalf("Put = %d, %v", n, err)
	}
	if got := st.Location("b1/backup.zst"); got != "s3://backups/team/db/b1/backup.zst" {
		t.Errorf("Location = %s", got)
	}
	r, err := st.Get(ctx, "b1/backup.zst")
	if err != nil {
		t.Fatal(err)
	}
	got, err := io.ReadAll(r)
	r.Close()
	if err != nil || !bytes.Equal(got, data) {
		t.Fatalf("Get returned %d bytes (%v), not what was put", len(got), err)
	}
	if ok, err := st.Exists(ctx, "b1/backup.zst"); !ok || err != nil {
		t.Fatalf("Exists = %v %v", ok, err)
	}
	if err := st.Delete(ctx, "b1/backup.zst"); err != nil {
		t.Fatal(err)
	}
	if ok, err := st.Exists(ctx, "b1/backup.zst"); ok || err != nil {
		t.Fatalf("after Delete: Exists = %v %v", ok, err)
	}
	if _, err := st.Get(ctx, "b1/backup.zst"); err == nil {
		t.Fatal("Get of a deleted object succeeded")
	}

	// Parts sent one at a time and four at once land in order all the same.
	for _, uploads := range []uint{1, 4} {
		c := cfg
		c.Uploads = uploads
		st, err := storage.New(c)
		if err != nil {
			t.Fatal(err)
		}
		if n, err := st.Put(ctx, "b2/backup.zst", io.MultiReader(bytes.NewReader(data))); err != nil || n != int64(len(data)) {
			t.Fatalf("Put with %d uploads = %d, %v", uploads, n, err)
		}
		r, err := st.Get(ctx, "b2/backup.zst")
		if err != nil {
			t.Fatal(err)
		}
		got, err := io.ReadAll(r)
		r.Close()
		if err != nil || !bytes.Equal(got, data) {
			t.Fatalf("%d uploads: Get returned %d bytes (%v), not what was put", uploads, len(got), err)
		}
	}

	bad := srv.Config("")
	bad.SecretAccessKey = "wrong-secret-value"
	st2, _ := storage.New(bad)
	_, err = st2.Put(ctx, "x", strings.NewReader("x"))
	if err == nil || strings.Contains(err.Error(), "wrong-secret-value") {
		t.Fatalf("Put with a wrong secret: %v", err)
	}
	if _, err := storage.New(storage.Config{Endpoint: "ftp://x", Bucket: "b"}); err == nil {
		t.Error("an ftp endpoint was accepted")
	}
}
