// Top-level code is main-actor isolated; keep it to one call (see PLATFORM-NOTES).
runLibraryBenchmarks()
