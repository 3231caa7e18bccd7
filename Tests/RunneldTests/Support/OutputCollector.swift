import Foundation
import RunnelTestSupport

/// Drains a child's output pipe on a background thread and keeps its lines.
///
/// Thread rules: `run()` executes on the collector's own thread and owns the pipe's read end
/// (it closes it at end of file). Every other member may be called from any thread; shared state
/// is guarded by one `NSCondition` (pthread-based) that also wakes waiters when a line arrives.
/// Draining continuously matters: a chatty daemon blocks once a pipe holds 64 KiB unread.
final class OutputCollector: @unchecked Sendable {
    private let condition = NSCondition()
    private var lines: [String] = []
    private var finished = false
    private let readFD: Int32

    init(readFD: Int32) {
        self.readFD = readFD
        let thread = Thread { [self] in self.run() }
        thread.name = "runneld-output"
        thread.start()
    }

    /// Every complete line so far.
    var allLines: [String] { condition.withLock { lines } }

    /// True once the pipe reached end of file (every writer exited or closed it).
    var isFinished: Bool { condition.withLock { finished } }

    /// Waits until some line yields a value through `match`, scanning from the first line.
    /// Returns nil at the deadline or when the output ended without a match.
    func firstMatch<T>(timeout: Duration, _ match: (String) -> T?) -> T? {
        let (seconds, attoseconds) = timeout.components
        let deadline = Date().addingTimeInterval(Double(seconds) + Double(attoseconds) / 1e18)
        condition.lock()
        defer { condition.unlock() }
        var scanned = 0
        while true {
            while scanned < lines.count {
                if let value = match(lines[scanned]) { return value }
                scanned += 1
            }
            if finished || !condition.wait(until: deadline) {
                // One last look at lines that raced with the wake-up.
                while scanned < lines.count {
                    if let value = match(lines[scanned]) { return value }
                    scanned += 1
                }
                return nil
            }
        }
    }

    private func run() {
        var pending = LineBuffer()
        var chunk = [UInt8](repeating: 0, count: 16_384)
        while true {
            let count = chunk.withUnsafeMutableBytes { read(readFD, $0.baseAddress, $0.count) }
            if count < 0 && errno == EINTR { continue }
            if count <= 0 { break }
            chunk.withUnsafeBytes { pending.append(UnsafeRawBufferPointer(rebasing: $0[0..<count])) }
            var fresh: [String] = []
            while let line = pending.nextLine() { fresh.append(line) }
            if !fresh.isEmpty {
                condition.withLock {
                    lines.append(contentsOf: fresh)
                    condition.broadcast()
                }
            }
        }
        close(readFD)
        condition.withLock {
            finished = true
            condition.broadcast()
        }
    }
}
