import Glibc
import RunnelClient
import RunnelJSON

/// Publishes every line of stdin to one subject (under one key of a map subject, when given),
/// pipelined.
///
/// Stdin is read in chunks; each chunk's complete lines become `pub` requests without `ref`
/// (the server replies to those only when they fail) and are sent in one write, followed by a
/// `ping` with a `ref`. The server handles a connection's requests in order, so a ping's reply
/// proves every line before it was processed. At most `window` chunks are unconfirmed: before
/// sending more, the publisher waits for the oldest ping's reply (reading the failure replies
/// that came before it), so the reply timeout bounds the server's work on one window, however
/// long the input, and the server never backs up on failure replies. A final line without
/// `\n` is published too; a trailing `\r` is dropped. One thread only.
final class StdinPublisher {
    private let session: RunnelSession
    private let requestHead: [UInt8]
    private let chunkSize = 64 * 1024
    /// Chunks sent whose ping reply has not come yet, at most.
    private let window = 4
    /// The `ref`s of the pings not yet answered, oldest first.
    private var unconfirmed: [String] = []
    /// Lines the server refused.
    private var failures = 0

    init(session: RunnelSession, subject: String, key: String? = nil) {
        self.session = session
        var head = JSONWriter()
        head.append("{\"op\":\"pub\",\"subject\":")
        head.writeString(subject)
        if let key {
            head.append(",\"key\":")
            head.writeString(key)
        }
        head.append(",\"value\":")
        requestHead = head.bytes
    }

    /// Publishes until end of input and returns how many lines the server refused (each
    /// reported on stderr).
    func run() throws(CLIFailure) -> Int {
        var pending: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: chunkSize)
        while true {
            let count = chunk.withUnsafeMutableBytes { read(0, $0.baseAddress, chunkSize) }
            if count < 0 {
                if errno == EINTR { continue }
                throw CLIFailure("cannot read stdin: \(LineSocket.describe(errno))")
            }
            if count == 0 { break }
            pending.append(contentsOf: chunk[0..<count])
            let consumed = try publishCompleteLines(in: pending)
            pending.removeFirst(consumed)
        }
        if !pending.isEmpty {
            pending.append(0x0A)
            _ = try publishCompleteLines(in: pending)
        }
        for ref in unconfirmed { _ = try session.awaitReply(ref: ref, onOtherLine: handle) }
        return failures
    }

    /// Sends a `pub` for every `\n`-terminated line in `bytes`; returns the bytes consumed.
    private func publishCompleteLines(in bytes: [UInt8]) throws(CLIFailure) -> Int {
        var batch = JSONWriter(reservingCapacity: bytes.count + bytes.count / 2 + 64)
        let consumed = bytes.withUnsafeBytes { raw -> Int in
            var lineStart = 0
            for index in 0..<raw.count where raw[index] == 0x0A {
                var lineEnd = index
                if lineEnd > lineStart && raw[lineEnd - 1] == 0x0D { lineEnd -= 1 }
                requestHead.withUnsafeBytes { batch.append(raw: $0) }
                ValueArgument.appendValue(line: UnsafeRawBufferPointer(rebasing: raw[lineStart..<lineEnd]), to: &batch)
                batch.append("}\n")
                lineStart = index + 1
            }
            return lineStart
        }
        guard !batch.bytes.isEmpty else { return consumed }
        if unconfirmed.count == window {
            _ = try session.awaitReply(ref: unconfirmed.removeFirst(), onOtherLine: handle)
        }
        do throws(RunnelError) { try session.connection.send(batch.bytes) } catch { throw CLIFailure(error) }
        unconfirmed.append(try session.send(RequestLine(op: "ping")))
        return consumed
    }

    /// A failure reply to a `pub` is reported and counted; a `closing` notice ends the run.
    private func handle(_ line: ServerLine) throws(CLIFailure) {
        switch line.kind {
        case .reply(ok: false):
            failures += 1
            StandardError.write("runnel: server error \(line.code ?? "unknown"): \(line.message ?? "")\n")
        case .event("closing"):
            throw CLIFailure("the server closed the connection: \(line.code ?? "unknown")")
        default:
            break
        }
    }
}
