import Foundation
import RunnelTestSupport
import Testing

/// Durable subjects across real restarts of a real runneld, on real SQLite files
/// (docs/protocol.md, "Positions and resume" and "Durable subjects").
@Suite(.serialized) struct DurableTests {
    /// A data directory of its own, removed at the end.
    final class DataDirectory {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("runnel-data-\(UUID().uuidString)")
            .path
        deinit { try? FileManager.default.removeItem(atPath: path) }
        var database: String { path + "/runnel.db" }

        /// Every file in the directory, by name, with its bytes.
        func files() throws -> [String: Data] {
            var files: [String: Data] = [:]
            for name in try FileManager.default.contentsOfDirectory(atPath: path) {
                files[name] = try Data(contentsOf: URL(fileURLWithPath: path + "/" + name))
            }
            return files
        }
    }

    /// Expects a start on `data` to be refused with an error containing `message`, leaving
    /// every file of the directory as it was.
    private func expectRefusedStart(
        _ config: RunneldConfig, on data: DataDirectory, saying message: String,
        sourceLocation: SourceLocation = #_sourceLocation
    ) throws {
        let before = try data.files()
        #expect(sourceLocation: sourceLocation) {
            _ = try RunneldProcess(config: config)
        } throws: { error in
            "\(error)".contains(message)
        }
        let after = try data.files()
        #expect(after.keys.sorted() == before.keys.sorted(), sourceLocation: sourceLocation)
        for (name, bytes) in before where after[name] != bytes {
            Issue.record("the refused start changed \(name)", sourceLocation: sourceLocation)
        }
    }

    private func config(_ data: DataDirectory, fsync: String, subjects: [[(key: String, toml: String)]] = [])
        -> RunneldConfig
    {
        var config = RunneldConfig()
        config.dataDir = data.path
        config.fsync = fsync
        config.subjects = subjects
        return config
    }

    /// The `pos` of `subject` in `list`.
    private func position(_ subject: String, _ client: BlockingTCPClient) throws -> String {
        try client.list(prefix: subject).first { $0["subject"]?.string == subject }?["pos"]?.string ?? ""
    }

    private func stop(_ server: RunneldProcess) throws {
        server.signal(SIGTERM)
        #expect(try server.waitForExit(timeout: .seconds(10)) == 0)
    }

    @Test func aCleanStopKeepsValuesEpochsAndSeqs() throws {
        let data = DataDirectory()
        var server = try RunneldProcess(config: config(data, fsync: "everysec"))
        var client = try server.connect()
        try client.expectOK(["op": "create", "subject": "d.r", "kind": "replay", "capacity": 3, "durable": true])
        try client.expectOK(["op": "create", "subject": "d.b", "kind": "behavior", "value": 0, "durable": true])
        for value in 1...5 { try client.publish("d.r", .number(Double(value))) }
        try client.publish("d.b", "on")
        let before = try position("d.r", client)
        #expect(before.hasSuffix(":5"))
        try stop(server)

        server = try RunneldProcess(config: config(data, fsync: "everysec"))
        client = try server.connect()
        #expect(try position("d.r", client) == before)
        #expect(try client.list(prefix: "d.").allSatisfy { $0["durable"] == true })
        let epoch = before.split(separator: ":")[0]
        let reply = try client.call(["op": "sub", "subject": "d.r", "sid": "x", "from": .string("\(epoch):3")])
        #expect(reply["resumed"] == true)
        #expect(try client.readJSON() == ["ev": "next", "sid": "x", "value": 4, "pos": .string("\(epoch):4")])
        #expect(try client.readJSON() == ["ev": "next", "sid": "x", "value": 5, "pos": .string("\(epoch):5")])
        try client.subscribe("d.b", sid: "b")
        #expect(try client.readJSON() == ["ev": "next", "sid": "b", "value": "on"])
        try stop(server)
    }

    @Test func aKillUnderEverysecTakesANewEpochAndKeepsTheSeqs() throws {
        let data = DataDirectory()
        var server = try RunneldProcess(config: config(data, fsync: "everysec"))
        var client = try server.connect()
        try client.expectOK(["op": "create", "subject": "k.r", "kind": "replay", "capacity": 10, "durable": true])
        for value in 1...3 { try client.publish("k.r", .number(Double(value))) }
        let before = try position("k.r", client)
        // Past the once-a-second sync.
        pollPause(.milliseconds(1500))
        server.kill()

        server = try RunneldProcess(config: config(data, fsync: "everysec"))
        client = try server.connect()
        let after = try position("k.r", client)
        #expect(after.hasSuffix(":3") && after != before)
        let reply = try client.call(["op": "sub", "subject": "k.r", "sid": "x", "from": .string(before)])
        #expect(reply["resumed"] == false)
        for value in 1...3 { #expect(try client.readJSON()["value"] == .number(Double(value))) }
        try server.connect().publish("k.r", 4)
        #expect(try client.readJSON()["pos"]?.string == after.replacingOccurrences(of: ":3", with: ":4"))
    }

    @Test func underAlwaysWhatWasAcknowledgedSurvivesAKillInTheSameEpoch() throws {
        let data = DataDirectory()
        var server = try RunneldProcess(config: config(data, fsync: "always"))
        var client = try server.connect()
        try client.expectOK(["op": "create", "subject": "a.b", "kind": "behavior", "durable": true])
        try client.publish("a.b", "last")
        let before = try position("a.b", client)
        server.kill()

        server = try RunneldProcess(config: config(data, fsync: "always"))
        client = try server.connect()
        #expect(try position("a.b", client) == before)
        let reply = try client.call(["op": "sub", "subject": "a.b", "sid": "x", "from": .string(before)])
        #expect(reply["resumed"] == true)
        client.expectNoLine()
        try stop(server)
    }

    @Test func underAlwaysRepliesAndEventsKeepTheirOrder() throws {
        let data = DataDirectory()
        let server = try RunneldProcess(config: config(data, fsync: "always"))
        let client = try server.connect()
        try client.expectOK(["op": "create", "subject": "o.r", "kind": "replay", "durable": true])
        try client.subscribe("o.r", sid: "s")
        try client.send(#"{"op":"pub","subject":"o.r","value":1,"ref":1}"#)
        try client.send(#"{"op":"ping","ref":2}"#)
        try client.send(#"{"op":"pub","subject":"plain","value":0,"ref":3}"#)
        try client.send(#"{"op":"complete","subject":"o.r","ref":4}"#)
        let lines = try (0..<5).map { _ in try client.readJSON() }
        // Replies keep request order; the value reaches the subscriber once on disk, after the
        // reply to its own `pub` (the reply was reserved first). Whether it comes before or
        // after the later replies depends on whether the disk answered before they were made.
        let replies = lines.filter { $0["ok"] != nil }
        #expect(
            replies == [
                ["ok": true, "ref": 1, "receivers": 1], ["ok": true, "ref": 2], ["ok": true, "ref": 3, "receivers": 0],
                ["ok": true, "ref": 4],
            ], "\(lines)")
        let value = lines.firstIndex(of: ["ev": "next", "sid": "s", "value": 1])
        #expect(value != nil && value! > lines.firstIndex(of: replies[0])!, "\(lines)")
        #expect(try client.readJSON() == ["ev": "completed", "sid": "s"])
        try stop(server)
    }

    @Test func aCorruptDatabaseStopsTheStartNamingItAndIsNotTouched() throws {
        let data = DataDirectory()
        try FileManager.default.createDirectory(atPath: data.path, withIntermediateDirectories: true)
        let garbage = Data(String(repeating: "this is not a database ", count: 500).utf8)
        try garbage.write(to: URL(fileURLWithPath: data.database))
        try expectRefusedStart(
            config(data, fsync: "everysec"), on: data, saying: "\(data.database): corrupt: file is not a database")
        #expect(try data.files() == ["runnel.db": garbage])
    }

    @Test func aTruncatedDatabaseStopsTheStart() throws {
        let data = DataDirectory()
        let server = try RunneldProcess(config: config(data, fsync: "always"))
        let client = try server.connect()
        try client.expectOK(["op": "create", "subject": "t.r", "kind": "replay", "durable": true])
        for value in 1...200 { try client.publishQuietly("t.r", .string(String(repeating: "v\(value)", count: 50))) }
        try client.barrier()
        try stop(server)
        let bytes = try Data(contentsOf: URL(fileURLWithPath: data.database))
        try bytes.prefix(bytes.count / 2).write(to: URL(fileURLWithPath: data.database))
        try expectRefusedStart(config(data, fsync: "always"), on: data, saying: "\(data.database): corrupt")
    }

    @Test func aConfiguredSubjectThatDisagreesWithTheStoredOneStopsTheStart() throws {
        let data = DataDirectory()
        let declared: [(key: String, toml: String)] = [
            ("name", #""cfg.r""#), ("kind", #""replay""#), ("capacity", "3"), ("durable", "true"),
        ]
        let server = try RunneldProcess(config: config(data, fsync: "everysec", subjects: [declared]))
        #expect(try server.connect().list(prefix: "cfg.").first?["durable"] == true)
        try stop(server)
        let changed: [(key: String, toml: String)] = [
            ("name", #""cfg.r""#), ("kind", #""replay""#), ("capacity", "5"), ("durable", "true"),
        ]
        try expectRefusedStart(
            config(data, fsync: "everysec", subjects: [changed]), on: data,
            saying: #"[[subjects]] "cfg.r" is cfg.r (replay, capacity 5, durable)"#)
    }

    /// After a kill the write-ahead log still holds the last commits: a refused start neither
    /// replays it into the database nor resets it, and the next start finds every value.
    @Test func aStartRefusedAfterAKillLeavesTheWriteAheadLogAsItWas() throws {
        let data = DataDirectory()
        let declared: [(key: String, toml: String)] = [
            ("name", #""cfg.k""#), ("kind", #""replay""#), ("capacity", "3"), ("durable", "true"),
        ]
        let server = try RunneldProcess(config: config(data, fsync: "always", subjects: [declared]))
        for value in 1...3 { try server.connect().publish("cfg.k", .number(Double(value))) }
        server.kill()
        #expect((try data.files()["runnel.db-wal"]?.count ?? 0) > 0)
        let changed: [(key: String, toml: String)] = [
            ("name", #""cfg.k""#), ("kind", #""behavior""#), ("durable", "true"),
        ]
        try expectRefusedStart(
            config(data, fsync: "always", subjects: [changed]), on: data,
            saying: #"[[subjects]] "cfg.k" is cfg.k (behavior, value null, durable)"#)
        let restarted = try RunneldProcess(config: config(data, fsync: "always", subjects: [declared]))
        let client = try restarted.connect()
        try client.subscribe("cfg.k", sid: "k")
        for value in 1...3 { #expect(try client.readJSON()["value"] == .number(Double(value))) }
    }

    @Test func aDataDirectoryThatIsAFileStopsTheStart() throws {
        let data = DataDirectory()
        try Data("x".utf8).write(to: URL(fileURLWithPath: data.path))
        #expect {
            _ = try RunneldProcess(config: config(data, fsync: "everysec"))
        } throws: { error in
            "\(error)".contains("\(data.path): not a directory")
        }
    }

    /// A data directory its user cannot read: runneld runs as `nobody` (through `setpriv`),
    /// the directory is root's with mode 0700. Needs root.
    @Test(.enabled(if: geteuid() == 0)) func anUnreadableDataDirectoryStopsTheStart() throws {
        let data = DataDirectory()
        try FileManager.default.createDirectory(
            atPath: data.path, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        let configPath = data.path + ".toml"
        defer { try? FileManager.default.removeItem(atPath: configPath) }
        try config(data, fsync: "everysec").toml.write(toFile: configPath, atomically: true, encoding: .utf8)
        try FileManager.default.setAttributes([.posixPermissions: 0o644], ofItemAtPath: configPath)
        #expect {
            _ = try RunneldProcess(
                executable: "/usr/bin/setpriv",
                arguments: [
                    "--reuid=65534", "--regid=65534", "--clear-groups", try RunneldBinary.path(), "--listen",
                    "127.0.0.1:0", "--http-listen", "", "--config", configPath,
                ])
        } throws: { error in
            "\(error)".contains("\(data.path): cannot read and write: Permission denied")
        }
    }

    /// A data directory on a tmpfs of 1 MiB that durable values fill: under `always` each
    /// refused value's reply says `storage` (an HTTP publish's answer `503` `storage`), what
    /// was acknowledged stays, and everything else goes on. Needs root, for `mount`.
    @Test(.enabled(if: geteuid() == 0)) func aFullDiskRefusesDurableWritesAndServesTheRest() throws {
        let data = DataDirectory()
        try FileManager.default.createDirectory(atPath: data.path, withIntermediateDirectories: true)
        #expect(run("/bin/mount", ["-t", "tmpfs", "-o", "size=1m", "tmpfs", data.path]) == 0)
        defer { _ = run("/bin/umount", ["-l", data.path]) }
        var server = try RunneldProcess(config: config(data, fsync: "always"))
        var client = try server.connect()
        try client.expectOK(["op": "create", "subject": "f.r", "kind": "replay", "capacity": 100000, "durable": true])
        let big = String(repeating: "x", count: 8000)
        var acknowledged = 0
        var refusal: JSON?
        for value in 1...400 {
            let reply = try client.call(["op": "pub", "subject": "f.r", "value": .string("\(value):\(big)")])
            if reply["ok"] == true {
                acknowledged = value
            } else {
                refusal = reply
                break
            }
        }
        #expect(refusal?["code"] == "storage", "\(String(describing: refusal))")
        #expect(refusal?["message"]?.string?.contains("durable subjects cannot be written") == true)
        // The HTTP front door says so too: 503 with the same code. (A value as large as the
        // refused one: a smaller one may fit in what the disk has left, and be kept.)
        let http = try server.connectHTTP()
        let body = "\"v:\(big)\""
        try http.sendRaw(
            "POST /pub/f.r HTTP/1.1\r\nHost: x\r\nConnection: close\r\nContent-Length: \(body.utf8.count)\r\n\r\n\(body)"
        )
        let answer = String(decoding: http.readBytesUntilClosed() ?? [], as: UTF8.self)
        #expect(answer.hasPrefix("HTTP/1.1 503 "), "\(answer)")
        #expect(answer.contains(#""code":"storage""#), "\(answer)")
        // The rest goes on.
        try client.barrier()
        try client.subscribe("plain.x", sid: "p")
        try server.connect().publish("plain.x", 1)
        #expect(try client.readJSON() == ["ev": "next", "sid": "p", "value": 1])
        #expect(try client.stats()["durable"]?["batches"]?.int ?? 0 > 0)
        server.kill()

        // Everything acknowledged is still there, in order.
        server = try RunneldProcess(config: config(data, fsync: "always"))
        client = try server.connect()
        try client.subscribe("f.r", sid: "all")
        for value in 1...acknowledged {
            #expect(try client.readJSON()["value"]?.string?.hasPrefix("\(value):") == true)
        }
        client.expectNoLine()
        server.kill()
    }

    private func run(_ executable: String, _ arguments: [String]) -> Int32 {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = arguments
        do { try process.run() } catch { return -1 }
        process.waitUntilExit()
        return process.terminationStatus
    }
}
