package tests

import (
	"fmt"
	"io/fs"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/chunks-dev/chunks/driver"
	chunkssql "github.com/chunks-dev/chunks/sql"
)

// TestChangelogHasEveryMigration: CHANGELOG.md has a section for every
// schema version, "## [N] - YYYY-MM-DD", newest first, under [Unreleased],
// naming its migration file and saying what an upgrade does (its
// "### Upgrade" part); and no section for a version without a migration.
// The next migration cannot land without its entry.
func TestChangelogHasEveryMigration(t *testing.T) {
	text, err := os.ReadFile("../CHANGELOG.md")
	if err != nil {
		t.Fatal(err)
	}
	heading := regexp.MustCompile(`(?m)^## \[([^\]]+)\](?: - (\d{4}-\d{2}-\d{2}))?$`)
	sections := map[string]string{} // version: its text
	var order []string
	locs := heading.FindAllStringSubmatchIndex(string(text), -1)
	for i, loc := range locs {
		end := len(text)
		if i+1 < len(locs) {
			end = locs[i+1][0]
		}
		version := string(text[loc[2]:loc[3]])
		if version != "Unreleased" && loc[4] < 0 {
			t.Errorf("CHANGELOG.md: ## [%s] has no date (## [%[1]s] - YYYY-MM-DD)", version)
		}
		order = append(order, version)
		sections[version] = string(text[loc[1]:end])
	}
	files, err := fs.Glob(chunkssql.Migrations(), "*.sql")
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"Unreleased"}
	for i := len(files) - 1; i >= 0; i-- {
		n, err := strconv.Atoi(strings.SplitN(files[i], "_", 2)[0])
		if err != nil || n != i+1 {
			t.Fatalf("migration %s: want its number to be %03d (001 to N, none missing)", files[i], i+1)
		}
		version := strconv.Itoa(n)
		want = append(want, version)
		section, ok := sections[version]
		switch {
		case !ok:
			t.Errorf("CHANGELOG.md has no section for schema version %d (%s): add ## [%d] - YYYY-MM-DD with what it adds and ### Upgrade", n, files[i], n)
		case !strings.Contains(section, "`sql/migrations/"+files[i]+"`"):
			t.Errorf("CHANGELOG.md's section [%d] does not name `sql/migrations/%s`", n, files[i])
		case !strings.Contains(section, "\n### Upgrade\n"):
			t.Errorf("CHANGELOG.md's section [%d] has no ### Upgrade: what the upgrade does to jobs and running workers, and whether it is safe under a live fleet", n)
		}
	}
	if fmt.Sprint(order) != fmt.Sprint(want) {
		t.Errorf("CHANGELOG.md's sections are %v, want %v (newest first)", order, want)
	}
	if want[1] != strconv.Itoa(driver.SchemaVersion()) {
		t.Errorf("the newest migration is %s, driver.SchemaVersion() %d", want[1], driver.SchemaVersion())
	}
}
