import RunnelTestSupport
import RunnelVersion
import Testing

/// The `runnel` CLI's connection as a new user meets it: `runnel sub` across a runneld killed
/// and started again (it connects again and resumes; `--no-reconnect` exits), the addresses
/// `--server` takes (the libraries' URLs, and the HTTP port named as the wrong one), what an
/// `unauthorized` reply tells the user to do, and `--version`.
@Suite("runnel CLI connections", .serialized, .timeLimit(.minutes(2))) struct RunnelCLIConnectionTests {
    /// Waits until the server at `at` counts `count` subscriptions (a `runnel sub` subscribed).
    private static func waitForSubscriptions(_ count: Int, _ at: [String]) throws -> Bool {
        try eventually {
            let lines = try CLIProcess.run(["stats"] + at).stdoutLines
            return lines.contains { $0.split(separator: " ") == ["subscriptions:", "\(count)"] } ? true : nil
        } ?? false
    }

    /// A durable replay subject written with `fsync = "always"`: its positions hold across a kill.
    @Test func subConnectsAgainAfterARestartAndResumesWithNothingLostOrRepeated() throws {
        let daemon = try ChecklistDaemon(toml: SwiftClientRestartTests.restartConfig)
        let at = ["--server", daemon.url, "--token", ChecklistDaemon.token]
        let create = try CLIProcess.run(["create", "kept", "--kind", "replay", "--capacity", "100", "--durable"] + at)
        #expect(create.status == 0, "\(create)")
        let subscriber = try CLIProcess(["sub", "kept", "--take", "6"] + at)
        for value in 1...3 { #expect(try CLIProcess.run(["pub", "kept", "\(value)"] + at).status == 0) }
        #expect(subscriber.waitForLines(3) == ["1", "2", "3"], "\(subscriber.stderr)")

        try daemon.restart()
        for value in 4...6 { #expect(try CLIProcess.run(["pub", "kept", "\(value)"] + at).status == 0) }
        #expect(try subscriber.waitForExit(timeout: .seconds(30)) == 0, "\(subscriber.stderr)")
        #expect(subscriber.stdoutLines == ["1", "2", "3", "4", "5", "6"], "\(subscriber.stderr)")
        #expect(subscriber.stderr.contains("; connecting again to resume after "), "\(subscriber.stderr)")
        #expect(!subscriber.stderr.contains("missed"), "\(subscriber.stderr)")
    }

    /// A plain subject starts a new epoch in a new process: the values published while it was
    /// down are gone, and the CLI says so before the values after the restart.
    @Test func subSaysWhenItCannotResume() throws {
        let daemon = try ChecklistDaemon(toml: SwiftClientRestartTests.restartConfig)
        let at = ["--server", daemon.url, "--token", ChecklistDaemon.token]
        let subscriber = try CLIProcess(["sub", "plain", "--take", "2"] + at)
        #expect(try Self.waitForSubscriptions(1, at))
        #expect(try CLIProcess.run(["pub", "plain", "1"] + at).status == 0)
        #expect(subscriber.waitForLines(1) == ["1"], "\(subscriber.stderr)")
        try daemon.restart()
        #expect(try Self.waitForSubscriptions(1, at))
        #expect(try CLIProcess.run(["pub", "plain", "2"] + at).status == 0)
        #expect(try subscriber.waitForExit(timeout: .seconds(30)) == 0, "\(subscriber.stderr)")
        #expect(subscriber.stdoutLines == ["1", "2"])
        #expect(subscriber.stderr.contains("values may have been missed"), "\(subscriber.stderr)")
    }

    @Test func subWithNoReconnectExitsOneWhenTheServerGoes() throws {
        let daemon = try ChecklistDaemon(toml: SwiftClientRestartTests.restartConfig)
        let at = ["--server", daemon.url, "--token", ChecklistDaemon.token]
        let subscriber = try CLIProcess(["sub", "gone", "--no-reconnect"] + at)
        #expect(try Self.waitForSubscriptions(1, at))
        #expect(try CLIProcess.run(["pub", "gone", "1"] + at).status == 0)
        #expect(subscriber.waitForLines(1) == ["1"], "\(subscriber.stderr)")
        daemon.kill()
        #expect(try subscriber.waitForExit(timeout: .seconds(10)) == 1, "\(subscriber.stderr)")
        #expect(subscriber.stdoutLines == ["1"])
        #expect(subscriber.stderr.hasPrefix("runnel: "), "\(subscriber.stderr)")
        #expect(!subscriber.stderr.contains("connecting again"), "\(subscriber.stderr)")
    }

    /// `--server` takes `runnel://` and `runnels://` as the libraries do; a `ws://` or `http://`
    /// address, and the HTTP port given as HOST:PORT, are named as the HTTP port's.
    @Test func serverTakesTheLibrariesURLsAndNamesTheHTTPPort() throws {
        let daemon = try ChecklistDaemon(toml: "", tls: true)
        let url = try CLIProcess.run(["ping", "--server", daemon.url])
        #expect(url.status == 0, "\(url)")
        let ca = try #require(daemon.certificates).path("ca.pem")
        let secure = try CLIProcess.run(["ping", "--server", daemon.tlsURL, "--ca-file", ca])
        #expect(secure.status == 0, "\(secure)")
        for scheme in ["ws", "wss", "http", "https"] {
            let other = try CLIProcess.run(["ping", "--server", "\(scheme)://127.0.0.1:\(daemon.process.port)"])
            #expect(other.status == 2, "\(other)")
            #expect(other.stderr.contains("are for the HTTP port"), "\(other)")
        }
        let httpPort = try #require(daemon.process.announcedPort("serving HTTP on"))
        let http = try CLIProcess.run(["ping", "--server", "127.0.0.1:\(httpPort)"])
        #expect(http.status == 1, "\(http)")
        #expect(
            http.stderr.hasPrefix("runnel: 127.0.0.1:\(httpPort) speaks HTTP: it is runneld's HTTP port"), "\(http)")
    }

    /// `unauthorized` says what to do: give a token, or that the one given was refused.
    @Test func unauthorizedPointsToTheToken() throws {
        let daemon = try ChecklistDaemon(toml: SwiftClientRestartTests.restartConfig)
        let without = try CLIProcess.run(["list", "--server", daemon.url])
        #expect(without.status == 1)
        #expect(without.stderr.contains("give it with --token TOKEN or $RUNNEL_TOKEN"), "\(without)")
        let wrong = try CLIProcess.run(["list", "--server", daemon.url], environment: ["RUNNEL_TOKEN": "nope"])
        #expect(wrong.status == 1)
        #expect(wrong.stderr.contains("the token of --token or $RUNNEL_TOKEN was refused"), "\(wrong)")
    }

    /// The version stamped at build time (`git describe` in a checkout), which runneld prints too
    /// (`RunneldCommandTests`).
    @Test func runnelPrintsItsVersion() throws {
        let client = try CLIProcess.run(["--version"])
        #expect(client.status == 0)
        #expect(client.stdout == "runnel \(RunnelVersion.text)\n", "\(client)")
        #expect(RunnelVersion.text.wholeMatch(of: /\S+/) != nil && RunnelVersion.text != "unknown")
    }

    /// The completion script docs/operations.md tells users to install.
    @Test func completionScriptsAreGenerated() throws {
        for shell in ["bash", "zsh", "fish"] {
            let script = try CLIProcess.run(["--generate-completion-script", shell])
            #expect(script.status == 0, "\(shell): \(script)")
            #expect(script.stdout.contains("runnel") && script.stdout.contains("sub"), "\(shell)")
        }
    }
}
