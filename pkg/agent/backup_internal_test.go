package agent

import (
	"context"
	"errors"
	"net/http"
	"testing"
	"time"

	"github.com/mysqlop/mysql-operator/pkg/agentapi"
)

// A job that ends at once must not race with the answer to the request that started it, nor
// with a repeated request for the same ID (run with -race; the CI failure this guards against
// came from a backup failing on wrong credentials while its 202 answer was being written).
func TestStartAnswersWithACopyOfTheState(t *testing.T) {
	b := &backups{cfg: BackupConfig{Timeout: time.Minute}, ctx: context.Background(), jobs: map[string]*agentapi.BackupState{}}
	fail := func(context.Context, *agentapi.BackupState) error { return errors.New("at once") }
	for i := 0; i < 50; i++ {
		id := "job-" + string(rune('a'+i%26)) + string(rune('a'+i/26))
		st, code, err := b.start(id, "s3://b/o", 0, fail)
		if err != nil || code != http.StatusAccepted || st.ID != id {
			t.Fatalf("start %s: %+v %d %v", id, st, code, err)
		}
		_ = st.Phase
		for {
			again, code, _ := b.start(id, "s3://b/o", 0, fail)
			if code == http.StatusOK && again.Phase == agentapi.BackupFailed {
				if again.Error != "at once" || again.CompletionTime == nil {
					t.Fatalf("ended job %+v", again)
				}
				break
			}
			time.Sleep(time.Millisecond)
		}
	}
}
