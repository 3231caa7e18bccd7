// Top-level code is MainActor-isolated (PLATFORM-NOTES): keep it to this one call.
RunnelCommand.main()
