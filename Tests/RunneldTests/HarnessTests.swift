import Foundation
import RunnelTestSupport
import Testing

/// The harness's own checks; they need no daemon.
@Suite struct HarnessTests {
    @Test func lineReaderSplitsChunksStripsCarriageReturnsAndTimesOut() throws {
        let listener = try LoopbackListener()
        let client = try BlockingTCPClient(port: listener.port)
        let server = try listener.accept()
        defer { close(server) }

        try writeAll(server, "first\nsecond\r\nthi")
        #expect(client.readLine() == "first")
        #expect(client.readLine() == "second")
        #expect(client.readLine(timeout: .milliseconds(50)) == nil)
        try writeAll(server, "rd\n\n{\"ok\":true,\"ref\":null,\"n\":1}\n")
        #expect(client.readLine() == "third")
        #expect(client.readLine() == "")
        #expect(try client.readJSON() == ["ok": true, "ref": nil, "n": 1])
        client.expectNoLine(within: .milliseconds(50))

        try writeAll(server, "last\npartial")
        shutdown(server, Int32(SHUT_WR))
        #expect(client.readLine() == "last")
        #expect(client.readLine() == nil)
        #expect(client.isClosedByPeer)
    }

    @Test func clientSendsExactBytesAndLines() throws {
        let listener = try LoopbackListener()
        let client = try BlockingTCPClient(port: listener.port)
        let server = try listener.accept()
        defer { close(server) }
        try client.send(#"{"op":"ping"}"#)
        try client.sendRaw([0xFF, 0x0A])
        try client.send(["op": "pub", "value": [1, "x"]])
        client.close()
        var received: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 4096)
        while true {
            let count = chunk.withUnsafeMutableBytes { read(server, $0.baseAddress, $0.count) }
            if count <= 0 { break }
            received += chunk[0..<count]
        }
        #expect(
            received == Array(#"{"op":"ping"}"#.utf8) + [0x0A, 0xFF, 0x0A]
                + Array(#"{"op":"pub","value":[1,"x"]}"#.utf8) + [0x0A])
    }

    @Test func pollReadableServesManyClients() throws {
        let listener = try LoopbackListener()
        let clients = try (0..<20).map { _ in try BlockingTCPClient(port: listener.port) }
        let servers = try clients.map { _ in try listener.accept() }
        defer { servers.forEach { close($0) } }
        for (index, fd) in servers.enumerated() where index % 2 == 0 { try writeAll(fd, "hello \(index)\n") }
        var seen: Set<Int> = []
        let deadline = Deadline(.seconds(5))
        while seen.count < 10 && !deadline.hasPassed {
            for index in pollReadable(clients, timeout: .seconds(1)) {
                while let line = clients[index].bufferedLine() {
                    #expect(line == "hello \(index)")
                    seen.insert(index)
                }
            }
        }
        #expect(seen == Set(stride(from: 0, to: 20, by: 2)))
    }

    @Test func jsonKeepsBooleansNumbersAndNullsApart() throws {
        let value = try JSON.parse(#"{"a":true,"b":1,"c":null,"d":"x","e":[1.5,false],"f":{}}"#)
        #expect(value["a"] == .bool(true))
        #expect(value["b"] == .number(1))
        #expect(value["a"] != value["b"])
        #expect(value["c"] == .null)
        #expect(value["missing"] == nil)
        #expect(value["e"]?[0]?.double == 1.5)
        #expect(value["f"] == .object([:]))
        #expect(value.keys == ["a", "b", "c", "d", "e", "f"])
        #expect(throws: HarnessError.self) { try JSON.parse("{\"a\":") }
        #expect((["k": "q\"\n", "n": 12, "z": nil] as JSON).text == #"{"k":"q\"\n","n":12,"z":null}"#)
    }

    @Test func configRendersTopLevelKeysThenSubjectTables() {
        var config = RunneldConfig()
        config.maxLineBytes = 1024
        config.slowConsumer = "drop"
        config.autoCreate = false
        config.authTokens = ["a\"b", "c"]
        config.subjects = [[("name", "\"s.one\""), ("kind", "\"replay\""), ("capacity", "4")]]
        #expect(
            config.toml == """
                max_line_bytes = 1024
                slow_consumer = "drop"
                auto_create = false
                auth_tokens = ["a\\"b", "c"]
                log_level = "info"

                [[subjects]]
                name = "s.one"
                kind = "replay"
                capacity = 4

                """)
    }

    @Test func listeningLineIsFoundTolerantly() {
        #expect(RunneldProcess.listeningPort(in: "2026-01-01 info runneld: listening on 127.0.0.1:40123") == 40123)
        #expect(RunneldProcess.listeningPort(in: "Listening on tcp://127.0.0.1:9 (v1)") == 9)
        #expect(RunneldProcess.listeningPort(in: "connected from 127.0.0.1:5000") == nil)
        #expect(RunneldProcess.listeningPort(in: "listening on 127.0.0.1:0") == nil)
        #expect(RunneldProcess.listeningPort(in: "runneld listening with TLS on 127.0.0.1:4000") == nil)
    }

    @Test func processHarnessReadsPortSignalsAndReaps() throws {
        let process = try RunneldProcess(
            executable: "/bin/sh",
            arguments: ["-c", "echo starting; echo 'info: listening on 127.0.0.1:4321' >&2; exec sleep 30"])
        #expect(process.port == 4321)
        #expect(process.stderrLines.contains("starting"))
        process.signal(SIGTERM)
        #expect(try process.waitForExit() == 128 + SIGTERM)
    }

    @Test func processHarnessReportsADaemonThatNeverListens() {
        #expect(throws: HarnessError.self) {
            _ = try RunneldProcess(executable: "/bin/sh", arguments: ["-c", "echo 'bad config' >&2; exit 3"])
        }
    }

    @Test func runneldBinaryIsBuiltNextToTheTests() throws {
        let path = try RunneldBinary.path()
        #expect(path.hasSuffix("/runneld"))
    }
}

/// A listening socket on an ephemeral loopback port, for the harness's own tests.
final class LoopbackListener {
    let fd: Int32
    let port: Int

    init() throws {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw SystemCallError("socket", errno) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr = in_addr(s_addr: UInt32(0x7F00_0001).bigEndian)
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { pointer in
                bind(fd, pointer, length) == 0 && listen(fd, 64) == 0 && getsockname(fd, pointer, &length) == 0
            }
        }
        guard bound else {
            close(fd)
            throw SystemCallError("bind/listen", errno)
        }
        self.fd = fd
        port = Int(UInt16(bigEndian: address.sin_port))
    }

    deinit { close(fd) }

    func accept() throws -> Int32 {
        let connection = Glibc.accept(fd, nil, nil)
        guard connection >= 0 else { throw SystemCallError("accept", errno) }
        return connection
    }
}

private func writeAll(_ fd: Int32, _ text: String) throws {
    let bytes = Array(text.utf8)
    var offset = 0
    while offset < bytes.count {
        let written = bytes[offset...].withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
        guard written > 0 else { throw SystemCallError("write", errno) }
        offset += written
    }
}
