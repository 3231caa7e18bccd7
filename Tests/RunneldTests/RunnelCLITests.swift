import Foundation
import RunnelTestSupport
import Testing

/// The `runnel` command-line client against a real `runneld` on an ephemeral port: every
/// subcommand, its output format and its exit status.
@Suite("runnel CLI", .serialized) struct RunnelCLITests {
    /// A fresh daemon and the `--server` arguments that reach it.
    private static func start(_ config: RunneldConfig = RunneldConfig()) throws -> (RunneldProcess, [String]) {
        let server = try RunneldProcess(config: config)
        return (server, ["--server", "127.0.0.1:\(server.port)"])
    }

    /// Waits until the server counts `count` subscriptions (a `runnel sub` has subscribed, or
    /// has gone).
    private static func waitForSubscriptions(_ count: Int, on server: RunneldProcess) throws -> Bool {
        let client = try server.connect()
        return try eventually { try client.stats()["subscriptions"]?.int == count ? true : nil } ?? false
    }

    // MARK: ping and connection errors

    @Test func pingPrintsPongAndRoundTripTime() throws {
        let (server, at) = try Self.start()
        defer { withExtendedLifetime(server) {} }
        let result = try CLIProcess.run(["ping"] + at)
        #expect(result.status == 0, "\(result)")
        #expect(result.stdout.wholeMatch(of: /pong \d+\.\d{3} ms\n/) != nil, "\(result)")
        // Connection options may also stand before the subcommand.
        let before = try CLIProcess.run(at + ["ping"])
        #expect(before.status == 0, "\(before)")
        // RUNNEL_SERVER is used when --server is absent.
        let fromEnvironment = try CLIProcess.run(["ping"], environment: ["RUNNEL_SERVER": "127.0.0.1:\(server.port)"])
        #expect(fromEnvironment.status == 0, "\(fromEnvironment)")
    }

    @Test func connectionRefusedSaysSoAndExitsOne() throws {
        // Port 1 on loopback: nothing listens there on a test machine.
        let result = try CLIProcess.run(["ping", "--server", "127.0.0.1:1"])
        #expect(result.status == 1)
        #expect(result.stderr == "runnel: cannot connect to 127.0.0.1:1: Connection refused (is runneld running?)\n")
        #expect(result.stdout.isEmpty)
    }

    @Test func usageErrorsExitTwo() throws {
        for arguments in [
            ["frobnicate"], ["sub"], ["sub", "x", "--take", "-1"], ["sub", "x", "--throttle", "0"],
            ["sub", "x", "--ops", "{"], ["sub", "x", "--ops", "{\"op\":\"take\"}"], ["pub"],
            ["ping", "--server", "localhost"], ["ping", "--server", "127.0.0.1:99999"],
            ["create", "x", "--kind", "queue"], ["create", "x", "--capacity", "3"],
            ["pub", "x", "--tsl"], ["pub", "x", "-abc"], ["pub", "x", "1", "2"], ["pub", "x", "--delete"],
            ["pub", "x", "--key", "k", "--delete", "1"], ["create", "x", "--ttl-s", "5"],
            ["create", "x", "--kind", "map", "--max-keys", "0"], ["map", "x.*"],
        ] {
            let server = arguments.contains("--server") ? [] : ["--server", "127.0.0.1:1"]
            let result = try CLIProcess.run(arguments + server)
            #expect(result.status == 2, "runnel \(arguments): \(result)")
            #expect(!result.stderr.isEmpty, "runnel \(arguments)")
        }
        let help = try CLIProcess.run(["--help"])
        #expect(help.status == 0)
        #expect(help.stdout.contains("SUBCOMMANDS"))
    }

    @Test func tokenFromFlagOrEnvironmentAuthenticates() throws {
        var config = RunneldConfig()
        config.authTokens = ["s3cret"]
        let (server, at) = try Self.start(config)
        defer { withExtendedLifetime(server) {} }
        let without = try CLIProcess.run(["ping"] + at)
        #expect(without.status == 1)
        #expect(without.stderr.hasPrefix("runnel: server error unauthorized: "), "\(without)")
        let wrong = try CLIProcess.run(["ping", "--token", "nope"] + at)
        #expect(wrong.status == 1)
        #expect(wrong.stderr.hasPrefix("runnel: server error unauthorized: "), "\(wrong)")
        #expect(try CLIProcess.run(["ping", "--token", "s3cret"] + at).status == 0)
        #expect(try CLIProcess.run(["ping"] + at, environment: ["RUNNEL_TOKEN": "s3cret"]).status == 0)
    }

    // MARK: pub

    @Test func pubSendsJSONOrText() throws {
        let (server, at) = try Self.start()
        defer { withExtendedLifetime(server) {} }
        let client = try server.connect()
        try client.subscribe("t", sid: "s")
        for (argument, expected) in [
            ("42", "42"), ("hello world", "\"hello world\""),
            (#"{"a":1.0,"b":[true,null]}"#, #"{"a":1.0,"b":[true,null]}"#),
            (#""quoted""#, #""quoted""#), ("tab\there \"q\"", #""tab\there \"q\"""#), ("", #""""#),
            // A negative number is a value, not an option.
            ("-5", "-5"), ("-1.5e3", "-1.5e3"), (#""-text""#, #""-text""#),
        ] {
            let result = try CLIProcess.run(["pub", "t", argument] + at)
            #expect(result.status == 0, "\(result)")
            #expect(result.stdout.isEmpty && result.stderr.isEmpty, "\(result)")
            #expect(client.readLine() == #"{"ev":"next","sid":"s","value":"# + expected + "}")
        }
    }

    @Test func pubStdinPublishesEveryOneOfOneHundredThousandLines() throws {
        let (server, at) = try Self.start()
        defer { withExtendedLifetime(server) {} }
        let subscriber = try CLIProcess(["sub", "big"] + at)
        #expect(try Self.waitForSubscriptions(1, on: server))
        let count = 100_000
        // Even lines are JSON numbers, odd lines text; the last line has no newline.
        var input = ""
        var expected: [String] = []
        expected.reserveCapacity(count)
        for index in 0..<count {
            let line = index % 2 == 0 ? "\(index)" : "line \(index) of text"
            input += line
            if index < count - 1 { input += "\n" }
            expected.append(index % 2 == 0 ? line : "\"\(line)\"")
        }
        let publish = try CLIProcess.run(["pub", "big"] + at, stdin: input, timeout: .seconds(120))
        #expect(publish.status == 0, "\(publish)")
        #expect(publish.stderr.isEmpty, "\(publish)")
        // Completing the subject ends the subscriber once it has printed everything before it.
        #expect(try CLIProcess.run(["complete", "big"] + at).status == 0)
        let status = try subscriber.waitForExit(timeout: .seconds(120))
        #expect(status == 0, "\(subscriber.stderr)")
        let lines = subscriber.stdoutLines
        #expect(lines.count == count)
        #expect(lines == expected)
    }

    @Test func pubStdinReportsRefusedLinesAndExitsOne() throws {
        let (server, at) = try Self.start()
        defer { withExtendedLifetime(server) {} }
        #expect(try CLIProcess.run(["create", "done"] + at).status == 0)
        #expect(try CLIProcess.run(["complete", "done"] + at).status == 0)
        let result = try CLIProcess.run(["pub", "done"] + at, stdin: "1\n2\n3\n")
        #expect(result.status == 1, "\(result)")
        let errors = result.stderr.split(separator: "\n")
        #expect(errors.count == 3, "\(result)")
        #expect(errors.allSatisfy { $0.hasPrefix("runnel: server error terminated: ") }, "\(result)")
        let single = try CLIProcess.run(["pub", "done", "1"] + at)
        #expect(single.status == 1)
        #expect(single.stderr.hasPrefix("runnel: server error terminated: "), "\(single)")
    }

    // MARK: sub

    @Test func subBuildsFilterMapThrottleTakeChainInOrder() throws {
        let (server, at) = try Self.start()
        defer { withExtendedLifetime(server) {} }
        // An expression may start with `-`: it is still the option's value.
        let subscriber = try CLIProcess(["sub", "n", "--filter", ". > 2", "--map", "-. * 10", "--take", "2"] + at)
        #expect(try Self.waitForSubscriptions(1, on: server))
        let publisher = try server.connect()
        for value in [1, 3, 2, 4, 5] { try publisher.publish("n", .number(Double(value))) }
        #expect(try subscriber.waitForExit(timeout: .seconds(10)) == 0, "\(subscriber.stderr)")
        #expect(subscriber.stdout == "-30\n-40\n")
    }

    @Test func durableCreateAndSubWithPositionsAndFrom() throws {
        let data = FileManager.default.temporaryDirectory.appendingPathComponent("runnel-cli-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: data) }
        var config = RunneldConfig()
        config.dataDir = data.path
        let (server, at) = try Self.start(config)
        defer { withExtendedLifetime(server) {} }
        #expect(
            try CLIProcess.run(["create", "kept", "--kind", "replay", "--capacity", "5", "--durable"] + at).status == 0)
        let plain = try CLIProcess.run(["create", "x", "--durable"] + at)
        #expect(plain.status == 2 && plain.stderr.contains("--durable applies only to --kind replay or behavior"))
        #expect(try server.connect().list(prefix: "kept").first?["durable"] == true)
        // One connection, each value acknowledged: published in this order, whatever the load.
        let publisher = try server.connect()
        for value in 1...3 { try publisher.publish("kept", .number(Double(value))) }

        let all = try CLIProcess.run(["sub", "kept", "--positions", "--take", "3"] + at)
        #expect(all.status == 0, "\(all)")
        let positions = all.stdoutLines.map { String($0.split(separator: " ")[0]) }
        #expect(all.stdoutLines.map { $0.split(separator: " ")[1] } == ["1", "2", "3"])
        #expect(positions.map { $0.split(separator: ":")[1] } == ["1", "2", "3"])

        // Resuming after the first prints the rest; a position of another epoch says it cannot.
        let resumed = try CLIProcess.run(["sub", "kept", "--from", positions[0], "--take", "2"] + at)
        #expect(resumed.stdout == "2\n3\n" && resumed.stderr.isEmpty, "\(resumed)")
        let stale = try CLIProcess.run(["sub", "kept", "--from", "gone:1", "--take", "3"] + at)
        #expect(stale.stdout == "1\n2\n3\n" && stale.stderr.contains("cannot resume after gone:1"), "\(stale)")
        // An epoch may start with `-` (one in 64 does): the position is still --from's value.
        let dashed = try CLIProcess.run(["sub", "kept", "--from", "-gone:1", "--take", "3"] + at)
        #expect(dashed.stdout == "1\n2\n3\n" && dashed.stderr.contains("cannot resume after -gone:1"), "\(dashed)")
    }

    @Test func subOpsAreAppendedAfterShortcuts() throws {
        let (server, at) = try Self.start()
        defer { withExtendedLifetime(server) {} }
        let subscriber = try CLIProcess(
            [
                "sub", "n", "--map", ". + 1", "--ops",
                #"[{"op":"scan","start":0,"expr":"$acc + ."},{"op":"take","count":3}]"#,
            ]
                + at)
        #expect(try Self.waitForSubscriptions(1, on: server))
        let publisher = try server.connect()
        for value in [1, 2, 3] { try publisher.publish("n", .number(Double(value))) }
        #expect(try subscriber.waitForExit(timeout: .seconds(10)) == 0, "\(subscriber.stderr)")
        #expect(subscriber.stdout == "2\n5\n9\n")
    }

    @Test func subThrottleHoldsTheLatestValue() throws {
        let (server, at) = try Self.start()
        defer { withExtendedLifetime(server) {} }
        let subscriber = try CLIProcess(["sub", "th", "--throttle", "0.2", "--take", "1"] + at)
        #expect(try Self.waitForSubscriptions(1, on: server))
        let publisher = try server.connect()
        for value in [1, 2, 3] { try publisher.publish("th", .number(Double(value))) }
        #expect(try subscriber.waitForExit(timeout: .seconds(10)) == 0, "\(subscriber.stderr)")
        #expect(subscriber.stdout == "3\n")
    }

    @Test func patternSubscriptionPrefixesSubjectsWithFlag() throws {
        let (server, at) = try Self.start()
        defer { withExtendedLifetime(server) {} }
        let prefixed = try CLIProcess(["sub", "s.*", "--subject"] + at)
        let plain = try CLIProcess(["sub", "s.*"] + at)
        #expect(try Self.waitForSubscriptions(2, on: server))
        let publisher = try server.connect()
        try publisher.publish("s.a", 1)
        try publisher.publish("s.b", "x y")
        try publisher.publish("s.c.deeper", 3)  // `*` is one token: not delivered
        // Sent as raw text: the value's bytes (1.50) must come out unchanged.
        try publisher.send(#"{"op":"pub","subject":"s.a","value":{"k":[1.50,null]}}"#)
        try publisher.barrier()
        #expect(prefixed.waitForLines(3) == ["s.a 1", #"s.b "x y""#, #"s.a {"k":[1.50,null]}"#])
        #expect(plain.waitForLines(3) == ["1", #""x y""#, #"{"k":[1.50,null]}"#])
        // A pattern subscription outlives its subjects; SIGINT ends it.
        prefixed.signal(SIGINT)
        plain.signal(SIGINT)
        #expect(try prefixed.waitForExit() == 130)
        #expect(try plain.waitForExit() == 130)
        #expect(try Self.waitForSubscriptions(0, on: server))
    }

    /// `runnel watchers S` prints S's occupancy: the count now, then 0 -> 1 and 1 -> 0 as they
    /// happen (a pattern counts too); patterns and `$` names are usage errors.
    @Test func watchersPrintsTheCountNowAndEachChange() throws {
        let (server, at) = try Self.start()
        defer { withExtendedLifetime(server) {} }
        let watchers = try CLIProcess(["watchers", "w.a"] + at)
        #expect(watchers.waitForLines(1) == ["0"], "\(watchers.stderr)")
        let subscriber = try server.connect()
        #expect(try subscriber.request(#"{"op":"sub","subject":"w.*","sid":"p","ref":1}"#)["ok"] == true)
        #expect(watchers.waitForLines(2) == ["0", "1"], "\(watchers.stderr)")
        #expect(try subscriber.request(#"{"op":"unsub","sid":"p","ref":2}"#)["ok"] == true)
        #expect(watchers.waitForLines(3) == ["0", "1", "0"], "\(watchers.stderr)")
        watchers.signal(SIGINT)
        #expect(try watchers.waitForExit() == 130)
        for subject in ["w.*", "$sys.x"] {
            #expect(try CLIProcess.run(["watchers", subject] + at).status == 2, "\(subject)")
        }
    }

    @Test func eventsFlagPrintsWholeLines() throws {
        let (server, at) = try Self.start()
        defer { withExtendedLifetime(server) {} }
        let subscriber = try CLIProcess(["sub", "ev", "--events"] + at)
        #expect(try Self.waitForSubscriptions(1, on: server))
        try server.connect().publish("ev", ["k": 1.5])
        #expect(try CLIProcess.run(["complete", "ev"] + at).status == 0)
        #expect(try subscriber.waitForExit(timeout: .seconds(10)) == 0, "\(subscriber.stderr)")
        let lines = subscriber.stdoutLines
        #expect(lines.count == 2, "\(lines)")
        let next = try JSON.parse(lines.first ?? "")
        #expect(next["ev"] == "next")
        #expect(next["value"] == ["k": 1.5])
        #expect(lines.first?.contains(#""value":{"k":1.5}"#) == true)
        #expect(try JSON.parse(lines.last ?? "")["ev"] == "completed")
    }

    @Test func subExitsOneOnErrorAndZeroOnCompletion() throws {
        let (server, at) = try Self.start()
        defer { withExtendedLifetime(server) {} }
        let failing = try CLIProcess(["sub", "e"] + at)
        let completing = try CLIProcess(["sub", "c"] + at)
        #expect(try Self.waitForSubscriptions(2, on: server))
        let error = try CLIProcess.run(["error", "e", "disk on fire"] + at)
        #expect(error.status == 0, "\(error)")
        #expect(try failing.waitForExit(timeout: .seconds(10)) == 1)
        #expect(failing.stderr == "runnel: subject_error: disk on fire\n")
        #expect(try CLIProcess.run(["complete", "c"] + at).status == 0)
        #expect(try completing.waitForExit(timeout: .seconds(10)) == 0, "\(completing.stderr)")
        #expect(completing.stdout.isEmpty)
    }

    @Test func badExpressionIsAServerError() throws {
        let (server, at) = try Self.start()
        defer { withExtendedLifetime(server) {} }
        let result = try CLIProcess.run(["sub", "x", "--filter", ". >"] + at)
        #expect(result.status == 1)
        #expect(result.stderr.hasPrefix("runnel: server error bad_expr: "), "\(result)")
    }

    @Test(arguments: [(SIGINT, Int32(130)), (SIGTERM, Int32(143))])
    func signalUnsubscribesAndExitsCleanly(signal: Int32, status: Int32) throws {
        let (server, at) = try Self.start()
        defer { withExtendedLifetime(server) {} }
        let subscriber = try CLIProcess(["sub", "live"] + at)
        #expect(try Self.waitForSubscriptions(1, on: server))
        try server.connect().publish("live", 7)
        #expect(subscriber.waitForLines(1) == ["7"])
        subscriber.signal(signal)
        #expect(try subscriber.waitForExit(timeout: .seconds(10)) == status)
        #expect(subscriber.stderr.isEmpty, "\(subscriber.stderr)")
        let stats = try server.connect().stats()
        #expect(stats["subscriptions"] == 0)
        // The subject stays and has nobody subscribed.
        let list = try CLIProcess.run(["list", "live"] + at)
        #expect(list.stdoutLines.last?.split(separator: " ", omittingEmptySubsequences: true).dropFirst(6).first == "0")
    }

    // MARK: subject management

    @Test func createListDeleteAndKindMismatch() throws {
        let (server, at) = try Self.start()
        defer { withExtendedLifetime(server) {} }
        #expect(
            try CLIProcess.run(["create", "r.one", "--kind", "replay", "--capacity", "3", "--retain-s", "90"] + at)
                .status
                == 0)
        #expect(try CLIProcess.run(["create", "b.two", "--kind", "behavior", "--value", #"{"x":1}"#] + at).status == 0)
        #expect(try CLIProcess.run(["create", "plain"] + at).status == 0)
        #expect(try CLIProcess.run(["pub", "r.one", "5"] + at).status == 0)

        let list = try CLIProcess.run(["list"] + at)
        #expect(list.status == 0, "\(list)")
        let rows = list.stdoutLines.map { $0.split(separator: " ", omittingEmptySubsequences: true).map(String.init) }
        #expect(
            rows.first == [
                "SUBJECT", "KIND", "CAPACITY", "RETAIN_S", "KEYS", "DURABLE", "SUBSCRIBERS", "PUBLISHED", "TERMINATED",
            ])
        let bySubject = Dictionary(rows.dropFirst().map { ($0[0], $0) }, uniquingKeysWith: { first, _ in first })
        #expect(bySubject["r.one"] == ["r.one", "replay", "3", "90", "-", "no", "0", "1", "no"])
        #expect(bySubject["b.two"]?[1] == "behavior")
        #expect(bySubject["plain"]?[1] == "subject")
        // Columns line up: every row's second column starts where the header's does.
        let kindColumn = list.stdoutLines.first?.range(of: "KIND")?.lowerBound.utf16Offset(in: list.stdoutLines[0])
        for line in list.stdoutLines.dropFirst() {
            let name = line.prefix { $0 != " " }
            let afterName = line.dropFirst(name.count).prefix { $0 == " " }
            #expect(name.count + afterName.count == kindColumn, "\(line)")
        }

        let prefixed = try CLIProcess.run(["list", "r."] + at)
        #expect(prefixed.stdoutLines.count == 2, "\(prefixed)")

        let mismatch = try CLIProcess.run(["create", "r.one", "--kind", "behavior"] + at)
        #expect(mismatch.status == 1)
        #expect(mismatch.stderr.hasPrefix("runnel: server error kind_mismatch: "), "\(mismatch)")

        #expect(try CLIProcess.run(["delete", "r.one"] + at).status == 0)
        let after = try CLIProcess.run(["list", "r."] + at)
        #expect(after.stdoutLines.count == 1, "\(after)")

        let json = try CLIProcess.run(["list", "--json"] + at)
        #expect(try JSON.parse(json.stdout.trimmingCharacters(in: .newlines))["subjects"]?.array?.count == 2)
    }

    // MARK: maps (version 1.3)

    /// `pub --key` writes a map's key (each stdin line in turn; a key may start with `-`),
    /// `--key --delete` removes it; a map `pub` without a key and a key on a plain subject are
    /// the server's `bad_request`.
    @Test func pubKeyWritesAndDeleteRemovesAMapKey() throws {
        let (server, at) = try Self.start()
        defer { withExtendedLifetime(server) {} }
        #expect(try CLIProcess.run(["create", "hosts", "--kind", "map"] + at).status == 0)
        let client = try server.connect()
        try client.subscribe("hosts", sid: "s")
        #expect(try client.readJSON() == ["ev": "synced", "sid": "s"])
        let write = try CLIProcess.run(["pub", "hosts", "--key", "web 1", #"{"load":0.5}"#] + at)
        #expect(write.status == 0 && write.stdout.isEmpty && write.stderr.isEmpty, "\(write)")
        #expect(try client.readJSON() == ["ev": "next", "sid": "s", "key": "web 1", "value": ["load": 0.5]])
        let lines = try CLIProcess.run(["pub", "hosts", "--key", "-k"] + at, stdin: "1\ntext\n")
        #expect(lines.status == 0 && lines.stderr.isEmpty, "\(lines)")
        for value in [1, "text"] as [JSON] {
            #expect(try client.readJSON() == ["ev": "next", "sid": "s", "key": "-k", "value": value])
        }
        #expect(try CLIProcess.run(["pub", "hosts", "--key", "web 1", "--delete"] + at).status == 0)
        #expect(try client.readJSON() == ["ev": "removed", "sid": "s", "key": "web 1", "reason": "deleted"])
        #expect(try CLIProcess.run(["create", "plain"] + at).status == 0)
        for arguments in [["pub", "hosts", "1"], ["pub", "plain", "--key", "a", "1"]] {
            let refused = try CLIProcess.run(arguments + at)
            #expect(refused.status == 1 && refused.stderr.hasPrefix("runnel: server error bad_request: "), "\(refused)")
        }
    }

    /// `runnel map` prints the table sorted by key once synced (`--once` exits there; a key with
    /// a tab is a JSON string), then each change; a subject that is no map is refused.
    @Test func mapPrintsTheSortedTableThenEachChange() throws {
        let (server, at) = try Self.start()
        defer { withExtendedLifetime(server) {} }
        #expect(try CLIProcess.run(["create", "hosts", "--kind", "map"] + at).status == 0)
        for (key, value) in [("web2", #"{"load":0.9}"#), ("web1", "0.4"), ("a\tb", "true")] {
            #expect(try CLIProcess.run(["pub", "hosts", "--key", key, value] + at).status == 0)
        }
        let table = ["\"a\\tb\"\ttrue", "web1\t0.4", "web2\t{\"load\":0.9}"]
        let once = try CLIProcess.run(["map", "hosts", "--once"] + at)
        #expect(once.status == 0 && once.stdoutLines == table && once.stderr.isEmpty, "\(once)")
        #expect(try Self.waitForSubscriptions(0, on: server))

        let follower = try CLIProcess(["map", "hosts"] + at)
        #expect(follower.waitForLines(3) == table, "\(follower.stderr)")
        #expect(try CLIProcess.run(["pub", "hosts", "--key", "web1", "0.5"] + at).status == 0)
        #expect(try CLIProcess.run(["pub", "hosts", "--key", "web2", "--delete"] + at).status == 0)
        let changes = ["web1\t0.5", "web2\t(removed: deleted)"]
        #expect(follower.waitForLines(5).map { Array($0.dropFirst(3)) } == changes, "\(follower.stderr)")
        follower.signal(SIGINT)
        #expect(try follower.waitForExit() == 130)

        #expect(try CLIProcess.run(["create", "plain"] + at).status == 0)
        for (subject, message) in [("plain", "plain is not a map but of kind subject"), ("none", "no subject none")] {
            let refused = try CLIProcess.run(["map", subject] + at)
            #expect(refused.status == 1 && refused.stderr.contains(message), "\(refused)")
        }
    }

    /// `runnel sub` on a map prints each value after its key and a tab (after the subject, for a
    /// pattern with --subject), a removal as `KEY<TAB>(removed: REASON)`, says `synced` on
    /// stderr; `runnel list` shows a map's max_keys, ttl_s and keys.
    @Test func subOnAMapPrintsKeysRemovalsAndSynced() throws {
        let (server, at) = try Self.start()
        defer { withExtendedLifetime(server) {} }
        let create = try CLIProcess.run(
            ["create", "m.jobs", "--kind", "map", "--ttl-s", "90", "--max-keys", "10"] + at)
        #expect(create.status == 0, "\(create)")
        #expect(try CLIProcess.run(["pub", "m.jobs", "--key", "j1", "queued"] + at).status == 0)
        let named = try CLIProcess(["sub", "m.jobs", "--positions"] + at)
        let pattern = try CLIProcess(["sub", "m.>", "--subject"] + at)
        #expect(try Self.waitForSubscriptions(2, on: server))
        #expect(eventually { named.stderr.contains("runnel: synced") }, "\(named.stderr)")
        #expect(try CLIProcess.run(["pub", "m.jobs", "--key", "j2", "running"] + at).status == 0)
        #expect(try CLIProcess.run(["pub", "m.jobs", "--key", "j1", "--delete"] + at).status == 0)
        let lines = named.waitForLines(3)?.map { String($0.split(separator: " ", maxSplits: 1).last ?? "") }
        #expect(lines == ["j1\t\"queued\"", "j2\t\"running\"", "j1\t(removed: deleted)"], "\(named.stderr)")
        #expect(named.stdoutLines.allSatisfy { $0.firstMatch(of: /^[A-Za-z0-9_\-]+:\d+\s/) != nil }, "\(named.stdout)")
        // A pattern gets the changes, no snapshot and no synced.
        let changes = ["m.jobs j2\t\"running\"", "m.jobs j1\t(removed: deleted)"]
        #expect(pattern.waitForLines(2) == changes, "\(pattern.stderr)")
        #expect(pattern.stderr.isEmpty, "\(pattern.stderr)")
        for process in [named, pattern] {
            process.signal(SIGINT)
            #expect(try process.waitForExit() == 130)
        }
        let row = try CLIProcess.run(["list", "m."] + at).stdoutLines.last?.split(separator: " ").map(String.init)
        #expect(row.map { Array($0.prefix(5)) } == ["m.jobs", "map", "10", "90", "1"], "\(row ?? [])")
    }

    @Test func replaySubscriberSeesReplayedValuesThenCompletion() throws {
        let (server, at) = try Self.start()
        defer { withExtendedLifetime(server) {} }
        #expect(try CLIProcess.run(["create", "hist", "--kind", "replay", "--capacity", "2"] + at).status == 0)
        for value in ["1", "2", "3"] { #expect(try CLIProcess.run(["pub", "hist", value] + at).status == 0) }
        #expect(try CLIProcess.run(["complete", "hist"] + at).status == 0)
        let result = try CLIProcess.run(["sub", "hist"] + at)
        #expect(result.status == 0, "\(result)")
        #expect(result.stdout == "2\n3\n")
        let list = try CLIProcess.run(["list", "hist"] + at)
        #expect(list.stdoutLines.last?.hasSuffix("yes") == true, "\(list)")
    }

    @Test func statsPrintsKeyValueLinesOrJSON() throws {
        let (server, at) = try Self.start()
        defer { withExtendedLifetime(server) {} }
        let result = try CLIProcess.run(["stats"] + at)
        #expect(result.status == 0, "\(result)")
        var fields: [String: String] = [:]
        for line in result.stdoutLines {
            let parts = line.split(separator: ":", maxSplits: 1)
            #expect(parts.count == 2, "\(line)")
            fields[String(parts[0])] = parts.last.map { $0.trimmingCharacters(in: .whitespaces) }
        }
        #expect(fields["connections"] == "1")
        #expect(fields["subscriptions"] == "0")
        #expect(fields["ok"] == nil && fields["ref"] == nil)
        for key in ["subjects", "timers", "published", "delivered", "dropped", "bytes_in", "bytes_out", "uptime_s"] {
            #expect(fields[key] != nil, "missing \(key): \(result)")
        }
        let json = try CLIProcess.run(["stats", "--json"] + at)
        let reply = try JSON.parse(json.stdout.trimmingCharacters(in: .newlines))
        #expect(reply["ok"] == true)
        #expect(reply["connections"] == 1)
    }
}
