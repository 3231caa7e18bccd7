import ArgumentParser
import Glibc
import RunnelClient

/// Prints one subscription's events on one connection until it ends, the connection is lost, a
/// signal arrives, or stdout closes; keeps the last position printed and how many values, from
/// which `runnel sub` resumes on a new connection.
///
/// A map subject's events (version 1.3) carry a key: a value is printed after its key and a
/// tab, a removal as `KEY<TAB>(removed: REASON)` (`MapLine`), and `synced` is said on stderr;
/// with a `MapTable` (`runnel map`) they go to the table instead, which prints them as a
/// sorted table. Before `synced` a map sends its keys in no order of position (a snapshot), so
/// the resume position is taken only at `synced`: the greatest position seen until then.
///
/// Output is buffered and flushed whenever no complete line is waiting, so a live stream shows
/// each value at once while a burst is written in large blocks. The wait for data is a `poll`
/// of at most 250 ms, and SIGINT/SIGTERM interrupt it (no `SA_RESTART`): on a signal the
/// subscription is removed with `unsub` (the server's `ok` proves it is gone) and the process
/// exits 128 + the signal. One thread only.
final class SubscriptionPrinter {
    private let session: RunnelSession
    private let sid: String
    /// The sid's UTF-8, compared with the raw sid of fast-path `next` lines.
    private let sidBytes: [UInt8]
    private let showSubject: Bool
    private let showPositions: Bool
    /// `--ts`: each value's publish time before it (`-` for one without).
    private let showTimes: Bool
    private let events: Bool
    private let output: FileDescriptorWriter
    /// The position of the last value printed (when the server sends positions).
    private var lastPositionBytes: [UInt8] = []
    /// Values printed on this connection.
    private(set) var printed = 0
    /// Why the connection ended, set where the line that ended it was handled.
    private var lost: String?
    /// `runnel map`'s table, which takes a map's events in place of printing them.
    private let table: MapTable?
    /// Whether this subscription has had its `synced` (a map's).
    private var synced = false
    /// The greatest position of a map's events before `synced`, kept there.
    private var snapshotPosition: String?
    /// Set when the table's `synced` ended the command (`--once`): `run` then unsubscribes.
    private var tableDone = false

    /// How a connection's subscription ended without failing.
    enum Ending: Equatable {
        /// The subscription completed.
        case completed
        /// The connection was lost (the reason), or the server closed it for a reason a new
        /// connection may not have (`closing`: `slow_consumer`, `shutdown`...).
        case lost(String)
        /// Stdout was closed (`| head`).
        case outputClosed
    }

    init(
        session: RunnelSession, sid: String, showSubject: Bool, showPositions: Bool = false, showTimes: Bool = false,
        events: Bool,
        output: FileDescriptorWriter, table: MapTable? = nil
    ) {
        self.session = session
        self.table = table
        self.output = output
        self.sid = sid
        sidBytes = Array(sid.utf8)
        self.showSubject = showSubject
        self.showPositions = showPositions
        self.showTimes = showTimes
        self.events = events
    }

    /// The position of the last value printed, when the server sent one.
    var lastPosition: String? {
        lastPositionBytes.isEmpty ? nil : String(decoding: lastPositionBytes, as: UTF8.self)
    }

    /// Returns how the subscription ended; throws `CLIFailure` when it fails and
    /// `ExitCode(128 + signal)` after a signal.
    func run() throws -> Ending {
        let connection = session.connection
        while true {
            if let signal = SignalFlag.pending {
                output.flush()
                unsubscribe()
                throw ExitCode(128 + signal)
            }
            if output.failed {
                // Whoever read our output has gone (`| head`): stop quietly.
                unsubscribe()
                return .outputClosed
            }
            if let ended = try connection.withNextLine(handle) {
                // Not from `handle`: the connection's buffer is lent to it.
                if tableDone { unsubscribe() }
                if ended { return lost.map(Ending.lost) ?? .completed }
                continue
            }
            output.flush()
            do throws(RunnelError) {
                _ = try connection.receive(timeoutMilliseconds: 250)
            } catch {
                output.flush()
                return .lost(error.message)
            }
        }
    }

    /// Prints or acts on one line; true when the subscription has ended (completed, or `lost`).
    private func handle(_ raw: UnsafeRawBufferPointer) throws -> Bool {
        // A map's lines carry a key and never have this shape; `runnel map` refuses any other.
        if !events, table == nil, let next = NextEventShape.match(raw) {
            if sidBytes.elementsEqual(raw[next.sid]) {
                printedValue(at: next.position.map { raw[$0] })
                if showPositions {
                    if let position = next.position {
                        output.append(UnsafeRawBufferPointer(rebasing: raw[position]))
                    } else {
                        output.append(byte: UInt8(ascii: "-"))
                    }
                    output.append(byte: UInt8(ascii: " "))
                }
                // A line with a time is never this shape (`NextEventShape`).
                if showTimes { output.append("- ") }
                if showSubject, let subject = next.subject {
                    output.append(UnsafeRawBufferPointer(rebasing: raw[subject]))
                    output.append(byte: UInt8(ascii: " "))
                }
                output.append(UnsafeRawBufferPointer(rebasing: raw[next.value]))
                output.append(byte: 0x0A)
            }
            return false
        }
        let bytes = Array(raw)
        guard let line = ServerLine(bytes) else {
            if bytes.isEmpty { return false }
            throw CLIFailure("unexpected line from the server: \(String(decoding: bytes, as: UTF8.self))")
        }
        guard case .event(let name) = line.kind else {
            if case .reply(ok: false) = line.kind { throw session.failure(line) }
            return false
        }
        if name != "closing" && line.sid != sid { return false }
        if events {
            bytes.withUnsafeBytes { output.append($0) }
            output.append(byte: 0x0A)
        }
        switch name {
        case "next":
            guard let key = line.key else {
                if table != nil { throw CLIFailure("a value came without a key: the subject is not a map") }
                printedValue(at: line.pos?.utf8)
                if !events, let range = line.valueRange {
                    writePrefixes(of: line)
                    bytes.withUnsafeBytes { output.append(UnsafeRawBufferPointer(rebasing: $0[range])) }
                    output.append(byte: 0x0A)
                }
                return false
            }
            printed += 1
            keepMapPosition(line.pos)
            guard !events, let range = line.valueRange else { return false }
            if let table {
                bytes.withUnsafeBytes { table.write(key: key, value: UnsafeRawBufferPointer(rebasing: $0[range])) }
            } else {
                writePrefixes(of: line)
                output.append(MapLine.keyField(key))
                bytes.withUnsafeBytes { output.append(UnsafeRawBufferPointer(rebasing: $0[range])) }
                output.append(byte: 0x0A)
            }
        case "removed":
            keepMapPosition(line.pos)
            guard !events, let key = line.key else { return false }
            if let table {
                table.remove(key: key, reason: line.reason)
            } else {
                writePrefixes(of: line)
                output.append(MapLine.keyField(key) + MapLine.removal(reason: line.reason) + "\n")
            }
        case "synced":
            synced = true
            if let snapshotPosition { keep(position: snapshotPosition.utf8) }
            if let table {
                tableDone = table.synced()
                if tableDone {
                    output.flush()
                    return true
                }
            } else if !events {
                output.flush()
                StandardError.write("runnel: synced (the lines so far give the map as it is now; changes follow)\n")
            }
        case "completed":
            output.flush()
            return true
        case "error":
            output.flush()
            throw CLIFailure(line.failureDescription)
        case "dropped":
            if !events {
                output.flush()
                // A slow consumer's drops, values conflation replaced, or a cluster's missed from other nodes.
                let count = line.count.map { "\($0) events" } ?? "events (how many is not known)"
                StandardError.write("runnel: the server dropped \(count)\n")
            }
        case "closing":
            output.flush()
            // A token refused or expired stays so on a new connection; any other reason may not.
            if line.code == "unauthorized" { throw session.failure(line) }
            lost = "the server closed the connection: \(line.code ?? "unknown")"
            return true
        default:
            break
        }
        return false
    }

    /// Counts a value of this subscription and keeps its position, when it has one.
    private func printedValue(at position: (some Collection<UInt8>)?) {
        printed += 1
        guard let position else { return }
        keep(position: position)
    }

    private func keep(position: some Collection<UInt8>) {
        lastPositionBytes.removeAll(keepingCapacity: true)
        lastPositionBytes.append(contentsOf: position)
    }

    /// Keeps a map event's position: at once after `synced`, where changes come in order; before
    /// it, the greatest of the epoch, for `synced` to keep.
    private func keepMapPosition(_ position: String?) {
        guard let position else { return }
        guard !synced else {
            keep(position: position.utf8)
            return
        }
        if let kept = snapshotPosition, let old = Self.parts(of: kept), let new = Self.parts(of: position),
            new.epoch == old.epoch, new.seq <= old.seq
        {
            return
        }
        snapshotPosition = position
    }

    /// A position's epoch and seq; nil when it is not `EPOCH:SEQ`.
    private static func parts(of position: String) -> (epoch: Substring, seq: UInt64)? {
        guard let colon = position.lastIndex(of: ":"), let seq = UInt64(position[position.index(after: colon)...])
        else { return nil }
        return (position[..<colon], seq)
    }

    /// `--positions`, `--ts` and `--subject`'s prefixes of a line parsed whole.
    private func writePrefixes(of line: ServerLine) {
        if showPositions { output.append((line.pos ?? "-") + " ") }
        if showTimes { output.append((line.ts.map { String($0) } ?? "-") + " ") }
        if showSubject, let subject = line.subject { output.append(subject + " ") }
    }

    /// Removes the subscription; failures are ignored, since the process is leaving anyway and
    /// the server disposes of a closed connection's subscriptions itself.
    private func unsubscribe() {
        var request = RequestLine(op: "unsub")
        request.string("sid", sid)
        _ = try? session.roundTrip(request, timeoutMilliseconds: 2000)
    }
}
