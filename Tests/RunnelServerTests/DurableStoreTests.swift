import Glibc
import Logging
import RunnelUV
import Testing

@testable import RunnelServer

/// The durable store in process, over real SQLite files in a temporary directory, with
/// `fsync = everysec` or `no` (whose values and replies go out at once: the loop these tests
/// never run would have to carry `always`'s commit reports; the daemon tests cover `always`).
@Suite struct DurableStoreTests {
    /// A new empty directory, removed by `remove()`.
    struct TemporaryDirectory {
        let path: String
        init() {
            var template = Array("/tmp/runnel-durable-XXXXXX".utf8CString)
            path = template.withUnsafeMutableBufferPointer { String(cString: mkdtemp($0.baseAddress!)!) }
        }
        func remove() { _ = system("rm -rf '\(path)'") }
    }

    private func open(_ directory: String, fsync: FsyncMode = .everysec) throws -> SessionHarness {
        try SessionHarness { scheduler in
            try DurableSubjectStore(
                directory: directory, fsync: fsync, scheduler: scheduler, logger: SessionHarness.logger)
        }
    }

    private func lines(_ harness: SessionHarness, _ requests: String...) -> [String] {
        let client = harness.connect()
        defer { client.close() }
        var lines: [String] = []
        for request in requests { lines += client.send(request) }
        return lines
    }

    @Test func retainedValuesTerminalAndSeqSurviveACleanStop() throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        var harness = try open(directory.path)
        _ = lines(
            harness, #"{"op":"create","subject":"r","kind":"replay","capacity":2,"durable":true}"#,
            #"{"op":"create","subject":"b","kind":"behavior","value":{"v":0},"durable":true}"#,
            #"{"op":"pub","subject":"r","value":1}"#, #"{"op":"pub","subject":"r","value":2}"#,
            #"{"op":"pub","subject":"r","value":3}"#, #"{"op":"pub","subject":"b","value":"x"}"#,
            #"{"op":"error","subject":"b","message":"done"}"#, #"{"op":"pub","subject":"plain","value":1}"#)
        let before = lines(harness, #"{"op":"list"}"#)
        harness.server.subjects.close()
        harness = try open(directory.path)
        let after = lines(harness, #"{"op":"list"}"#)
        // The same epochs and seqs; the plain subject is gone; published counts start again.
        #expect(before.first?.contains(#""subject":"plain""#) == true)
        #expect(after.first?.contains(#""subject":"plain""#) == false)
        for name in ["r", "b"] {
            let position = { (line: String?) in
                line.flatMap { $0.range(of: #""subject":"\#(name)""#) }.map { range in
                    String(line![range.upperBound...].split(separator: "}")[0])
                }?.components(separatedBy: #""pos":"#).last
            }
            #expect(position(before.first) != nil && position(before.first) == position(after.first))
        }
        #expect(after.first?.contains(#""durable":true"#) == true)
        #expect(
            lines(harness, #"{"op":"sub","subject":"r","sid":"s"}"#) == [
                #"{"ok":true,"sid":"s"}"#, #"{"ev":"next","sid":"s","value":2}"#, #"{"ev":"next","sid":"s","value":3}"#,
            ])
        #expect(
            lines(harness, #"{"op":"sub","subject":"b","sid":"s"}"#) == [
                #"{"ok":true,"sid":"s"}"#, #"{"ev":"next","sid":"s","value":"x"}"#,
                #"{"ev":"error","sid":"s","code":"subject_error","message":"done"}"#,
            ])
        // Restored terminated, it takes no value (`pub` checks the entry's flag, not the subject).
        #expect(
            lines(harness, #"{"op":"pub","subject":"b","value":"y","ref":1}"#) == [
                #"{"ok":false,"ref":1,"code":"terminated","message":"subject 'b' is terminated"}"#
            ])
        harness.server.subjects.close()
    }

    @Test func deleteRemovesWhatWasKeptAndCreateChecksDurable() throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        var harness = try open(directory.path, fsync: .no)
        _ = lines(
            harness, #"{"op":"create","subject":"gone","kind":"replay","durable":true}"#,
            #"{"op":"pub","subject":"gone","value":1}"#, #"{"op":"delete","subject":"gone"}"#,
            #"{"op":"create","subject":"kept","kind":"replay","capacity":4,"durable":true}"#)
        #expect(
            lines(harness, #"{"op":"create","subject":"kept","kind":"replay","capacity":4}"#).first?.contains(
                #""code":"kind_mismatch","message":"subject 'kept' exists as replay (capacity 4, durable)""#) == true)
        harness.server.subjects.close()
        harness = try open(directory.path, fsync: .no)
        #expect(harness.server.subjects["gone"] == nil)
        #expect(harness.server.subjects["kept"]?.isDurable == true)
        harness.server.subjects.close()
    }

    @Test func aConfiguredSubjectMustAgreeWithTheStoredOne() throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        var harness = try open(directory.path)
        _ = lines(harness, #"{"op":"create","subject":"cfg","kind":"replay","capacity":3,"durable":true}"#)
        harness.server.subjects.close()
        var config = ServerConfig()
        config.subjects = [SubjectDefinition(name: "cfg", kind: .replay, capacity: 5, durable: true)]
        harness = try SessionHarness(config: config) { scheduler in
            try DurableSubjectStore(
                directory: directory.path, fsync: .everysec, scheduler: scheduler, logger: SessionHarness.logger)
        }
        #expect(throws: SubjectConflict.self) { try harness.run { try harness.server.createConfiguredSubjects() } }
        harness.server.subjects.close()
        // retain_s is part of the shape: kept in the file, it must be in the entry too.
        harness = try open(directory.path)
        _ = lines(
            harness, #"{"op":"create","subject":"aged","kind":"replay","capacity":3,"durable":true,"retain_s":60}"#)
        harness.server.subjects.close()
        for (retain, agrees) in [(nil, false), (60_000 as Int64?, true)] {
            config.subjects = [
                SubjectDefinition(name: "aged", kind: .replay, capacity: 3, retainMilliseconds: retain, durable: true)
            ]
            harness = try SessionHarness(config: config) { scheduler in
                try DurableSubjectStore(
                    directory: directory.path, fsync: .everysec, scheduler: scheduler, logger: SessionHarness.logger)
            }
            let outcome = Result { try harness.run { try harness.server.createConfiguredSubjects() } }
            if agrees {
                #expect(throws: Never.self) { try outcome.get() }
            } else {
                #expect(throws: SubjectConflict.self) { try outcome.get() }
                #expect("\(outcome)".contains("kept in data_dir is replay (capacity 3, retain_s 60, durable)"))
            }
            harness.server.subjects.close()
        }
    }

    @Test func aFileThatIsNotADatabaseStopsTheStartAndIsLeftAsItWas() throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let path = directory.path + "/runnel.db"
        let garbage = String(repeating: "not a database ", count: 400)
        _ = system("printf '%s' '\(garbage)' > '\(path)'")
        let before = try fileBytes(path)
        #expect {
            _ = try DurableSubjectStore(
                directory: directory.path, fsync: .everysec, scheduler: EventLoop().scheduler,
                logger: SessionHarness.logger)
        } throws: { error in
            "\(error)".hasPrefix(path) && "\(error)".contains("not a database")
        }
        #expect(try fileBytes(path) == before)
        #expect(access(path + "-wal", F_OK) != 0)
    }

    @Test func aDataDirectoryThatIsAFileIsNamed() throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let file = directory.path + "/file"
        _ = system("touch '\(file)'")
        #expect {
            _ = try DurableSubjectStore(
                directory: file, fsync: .everysec, scheduler: EventLoop().scheduler, logger: SessionHarness.logger)
        } throws: { error in
            "\(error)" == "\(file): not a directory"
        }
    }

    private func fileBytes(_ path: String) throws -> [UInt8] {
        guard let file = fopen(path, "rb") else { return [] }
        defer { fclose(file) }
        var bytes: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        while true {
            let count = fread(&buffer, 1, buffer.count, file)
            if count == 0 { break }
            bytes += buffer[..<count]
        }
        return bytes
    }
}
