import ArgumentParser
import RunnelServer
import RunnelVersion
import Testing

@testable import runneld

@Suite("runneld command line")
struct RunneldCommandTests {
    static var packageRoot: String {
        var components = "\(#filePath)".split(separator: "/", omittingEmptySubsequences: false)
        components.removeLast(3)
        return components.joined(separator: "/")
    }

    @Test func parsesEveryOption() throws {
        let command = try RunneldCommand.parse([
            "--config", "/etc/runnel/runneld.toml", "--listen", "[::1]:0", "--log-level", "debug", "--check-config",
        ])
        #expect(command.config == "/etc/runnel/runneld.toml")
        #expect(command.listen == "[::1]:0")
        #expect(command.logLevel == "debug")
        #expect(command.checkConfig)
    }

    @Test func versionIsTheStampedOne() {
        #expect(RunneldCommand.configuration.version == "runneld \(RunnelVersion.text)")
    }

    @Test func noOptionsMeansBuiltInDefaults() throws {
        let command = try RunneldCommand.parse([])
        #expect(command.config == nil && command.listen == nil && command.logLevel == nil && !command.checkConfig)
    }

    @Test func checkConfigAcceptsTheShippedFile() throws {
        var command = try RunneldCommand.parse([
            "--config", Self.packageRoot + "/config/runneld.toml", "--check-config",
        ])
        try command.run()
    }

    @Test func invalidConfigurationExitsWithStatusTwo() throws {
        let cases: [[String]] = [
            ["--config", "/nonexistent/runneld.toml", "--check-config"],
            ["--listen", "localhost:1", "--check-config"],
            ["--log-level", "loud", "--check-config"],
        ]
        for arguments in cases {
            var command = try RunneldCommand.parse(arguments)
            #expect(throws: ExitCode(2), "\(arguments)") { try command.run() }
        }
    }

    @Test func unknownOptionsAreParseErrors() {
        #expect(throws: (any Error).self) { try RunneldCommand.parse(["--bogus"]) }
        #expect(throws: (any Error).self) { try RunneldCommand.parse(["--config"]) }
    }
}
