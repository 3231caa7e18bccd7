// Kept to one call: top-level code is @MainActor (see PLATFORM-NOTES).
runEchoServer()
