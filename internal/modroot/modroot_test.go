package modroot

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

func TestFindWalksUpToGoMod(t *testing.T) {
	root := t.TempDir()
	if err := os.WriteFile(filepath.Join(root, "go.mod"), []byte("module x\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	deep := filepath.Join(root, "a", "b", "c")
	if err := os.MkdirAll(deep, 0o755); err != nil {
		t.Fatal(err)
	}
	got, err := Find(deep)
	if err != nil || got != root {
		t.Fatalf("Find(%s) = %q, %v; want %q", deep, got, err, root)
	}
}

func TestFindWithoutGoModFails(t *testing.T) {
	if _, err := Find(t.TempDir()); !errors.Is(err, ErrNotFound) {
		t.Fatalf("want ErrNotFound, got %v", err)
	}
}

func TestFromWorkingDirFindsThisModule(t *testing.T) {
	root, err := FromWorkingDir()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "statemachine", "reservation.asl.json")); err != nil {
		t.Fatalf("root %s is not seatsaga's: %v", root, err)
	}
}
