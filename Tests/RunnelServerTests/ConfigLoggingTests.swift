import Logging
import Runnel
import Testing

@testable import RunnelDaemon
@testable import RunnelServer

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

@Suite("Logging to stderr")
struct ConfigLoggingTests {
    /// 2026-11-22T03:39:31.123Z
    static let time = timespec(tv_sec: 1_795_318_771, tv_nsec: 123_456_789)

    @Test func plainLinesHaveTimestampLevelLabelMessageAndSortedMetadata() {
        let line = LogLineFormatter(style: .plain).format(
            level: .warning, label: "runneld", message: "slow consumer",
            metadata: ["peer": "127.0.0.1:5000", "bytes": "9000"], time: Self.time)
        #expect(line == "2026-11-22T03:39:31.123Z warning runneld: slow consumer bytes=9000 peer=127.0.0.1:5000\n")
    }

    @Test func journaldLinesCarryTheSyslogPriorityAndNoTimestamp() {
        let formatter = LogLineFormatter(style: .journald)
        let expected: [(Logger.Level, Int)] = [
            (.trace, 7), (.debug, 7), (.info, 6), (.notice, 5), (.warning, 4), (.error, 3), (.critical, 2),
        ]
        for (level, priority) in expected {
            let line = formatter.format(level: level, label: "r", message: "m", metadata: [:], time: Self.time)
            #expect(line == "<\(priority)>r: m\n")
        }
    }

    @Test func oneEventIsAlwaysOneLine() {
        let line = LogLineFormatter(style: .journald).format(
            level: .error, label: "r", message: "two\nlines\u{1}",
            metadata: ["why": "a \"b\"\nc", "empty": "", "list": ["x", "y z"], "eq": "a=b"], time: Self.time)
        #expect(line == #"<3>r: two\nlines\x01 empty="" eq="a=b" list="[x,\"y z\"]" why="a \"b\"\nc""# + "\n")
        #expect(line.filter { $0 == "\n" }.count == 1)
    }

    @Test func timestampsPadEveryField() {
        #expect(LogLineFormatter.timestamp(timespec(tv_sec: 0, tv_nsec: 5_000_000)) == "1970-01-01T00:00:00.005Z")
    }

    @Test func theSharedLevelFiltersAndChangesAtRuntime() {
        let lines = Locked<[String]>([])
        let setting = LogLevelSetting(.info)
        var logger = Logger(label: "test") { label in
            StderrLogHandler(
                label: label, levelSetting: setting, formatter: LogLineFormatter(style: .journald),
                output: { line in lines.withLock { $0.append(line) } })
        }
        logger[metadataKey: "conn"] = "7"
        logger.debug("hidden")
        logger.info("shown", metadata: ["sid": "s1"])
        setting.level = .debug  // as a SIGHUP reload does
        logger.debug("now shown")
        logger.logLevel = .error  // a logger's level is the shared level
        #expect(setting.level == .error)
        logger.warning("hidden again")
        logger.critical("bad")
        #expect(
            lines.withLock { $0 } == [
                "<6>test: shown conn=7 sid=s1\n", "<7>test: now shown conn=7\n", "<2>test: bad conn=7\n",
            ])
    }

    @Test func journalStreamMustMatchTheDescriptor() throws {
        var fds: [Int32] = [0, 0]
        try #require(pipe(&fds) == 0)
        defer {
            close(fds[0])
            close(fds[1])
        }
        var status = stat()
        try #require(fstat(fds[1], &status) == 0)
        let own = "\(status.st_dev):\(status.st_ino)"
        #expect(JournalStream.isJournal(descriptor: fds[1], environmentValue: own))
        #expect(!JournalStream.isJournal(descriptor: fds[1], environmentValue: nil))
        #expect(!JournalStream.isJournal(descriptor: fds[1], environmentValue: "\(status.st_dev):\(status.st_ino + 1)"))
        #expect(!JournalStream.isJournal(descriptor: fds[1], environmentValue: "garbage"))
        #expect(!JournalStream.isJournal(descriptor: -1, environmentValue: own))
    }
}
