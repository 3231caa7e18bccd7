/// When the reader sends a `ping` and when it gives a connection up: after `interval` without a
/// byte from the server, a `ping`; when nothing at all comes within `timeout` more, the
/// connection is taken for lost (a server or network gone without a word leaves a socket open
/// that would never be read from again), and the client reconnects.
///
/// Thread rules: a value owned by the reader thread. Lifetime rule: one per connection read.
struct KeepAlive {
    enum Due: Equatable {
        case nothing
        /// Time to send a `ping`.
        case ping
        /// The `ping` went unanswered: the connection is lost.
        case lost
    }

    private let interval: Int64?
    private let timeout: Int64
    private var heardAt: Int64
    private var pingedAt: Int64?

    /// `interval` nil: no pings, the connection is never given up for its silence.
    init(interval: Duration?, timeout: Duration, now: Int64) {
        self.interval = interval?.wholeMilliseconds
        self.timeout = timeout.wholeMilliseconds
        heardAt = now
    }

    /// How long the next wait for data may last, in milliseconds (-1: as long as it takes).
    func wait(now: Int64) -> Int32 {
        guard let interval else { return -1 }
        let until = pingedAt.map { $0 + timeout } ?? heardAt + interval
        return Int32(clamping: max(0, until - now))
    }

    /// The server sent something.
    mutating func heard(now: Int64) {
        heardAt = now
        pingedAt = nil
    }

    /// A wait ended without data: what is due now.
    mutating func quiet(now: Int64) -> Due {
        guard let interval else { return .nothing }
        if let pingedAt { return now - pingedAt >= timeout ? .lost : .nothing }
        guard now - heardAt >= interval else { return .nothing }
        pingedAt = now
        return .ping
    }
}

extension Duration {
    /// The duration in whole milliseconds.
    var wholeMilliseconds: Int64 {
        let parts = components
        return parts.seconds * 1000 + parts.attoseconds / 1_000_000_000_000_000
    }

    /// The duration as the client's messages give it: whole seconds as `30`, others as `0.3`.
    var secondsText: String {
        let milliseconds = wholeMilliseconds
        return milliseconds % 1000 == 0 ? "\(milliseconds / 1000)" : "\(Double(milliseconds) / 1000)"
    }
}
