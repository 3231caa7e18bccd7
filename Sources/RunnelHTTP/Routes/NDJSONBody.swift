import RunnelProtocol
import RunnelServer

/// The body of a `POST /pub/SUBJECT` in NDJSON: each line one JSON value, published as soon
/// as its line is complete, so a body of any length streams through in the memory of one
/// line (`max_line_bytes`). Blank lines are skipped; a `\r` before a `\n` is dropped. The
/// first bad line fails the request there: nothing after it is published, and the error,
/// with `published`, is answered at once (the rest of the body is read and thrown away).
/// Answered `{"ok":true,"published":N}` after the last line.
///
/// Under `backpressure`, a line whose value reaches a lagging subscriber pauses the request:
/// the connection is not read, the rest of what was read already (at most one read's worth)
/// is kept in `held`, and once the publication resumes it is published, in order, and reading
/// goes on. Loop thread only.
final class NDJSONBody: HTTPBodyReader {
    private let publication: Publication
    private let maxLineBytes: Int
    /// The start of a line split across reads.
    private var partial: [UInt8] = []
    private var failed = false
    /// Body bytes read while the publication was paused, not looked at yet.
    private var held: [UInt8] = []
    /// The body ended while the publication was paused: `finish` once `held` is done.
    private var finishesAfterHeld = false

    init(_ publication: Publication, maxLineBytes: Int) {
        self.publication = publication
        self.maxLineBytes = maxLineBytes
    }

    func read(_ bytes: UnsafeRawBufferPointer) {
        guard !failed else { return }
        guard !publication.isPaused && held.isEmpty else {
            held.append(contentsOf: bytes)
            return
        }
        var rest = bytes
        while let newline = rest.firstIndex(of: 0x0A) {
            if publication.isPaused {
                pause(keeping: rest)
                return
            }
            let line = UnsafeRawBufferPointer(rebasing: rest[..<newline])
            rest = UnsafeRawBufferPointer(rebasing: rest[(newline + 1)...])
            if partial.isEmpty {
                publish(line)
            } else {
                partial.append(contentsOf: line)
                partial.withUnsafeBytes { publish($0) }
                partial.removeAll(keepingCapacity: true)
            }
            if failed { return }
        }
        // An unfinished line is kept only up to the limit (and a `\r`): past it, it has failed.
        guard partial.count + rest.count <= maxLineBytes + 1 else {
            fail(lineTooLong)
            return
        }
        partial.append(contentsOf: rest)
        if publication.isPaused { pause(keeping: UnsafeRawBufferPointer(start: nil, count: 0)) }
    }

    func finish() {
        guard !failed else { return }
        guard !publication.isPaused && held.isEmpty else {
            finishesAfterHeld = true
            return
        }
        if !partial.isEmpty {
            partial.withUnsafeBytes { publish($0) }
            if failed { return }
        }
        let publication = self.publication
        publication.answer {
            var line = ServerLineWriter.reply(ok: true, ref: nil)
            line.member("published", integer: publication.published)
            return .json(line.finish())
        }
    }

    func abort(_ failure: HTTPFailure) {
        guard !failed else { return }
        fail(failure.error)
    }

    /// Stops reading the connection, keeping `rest` for when the publication resumes.
    private func pause(keeping rest: UnsafeRawBufferPointer) {
        held.append(contentsOf: rest)
        publication.exchange.pauseInput()
        // Held strongly: the connection lets go of a body reader once the body has ended.
        publication.whenResumed { self.resume() }
    }

    /// The publication resumed: what was held is read, in order (it may pause again), then the
    /// connection, or the end of the body.
    private func resume() {
        let pending = held
        held = []
        pending.withUnsafeBytes { read($0) }
        guard !failed, !publication.isPaused, held.isEmpty else { return }
        if finishesAfterHeld {
            finish()
        } else {
            publication.exchange.resumeInput()
        }
    }

    /// Publishes one line (without its `\n`), or fails the request at it.
    private func publish(_ line: UnsafeRawBufferPointer) {
        var line = line
        if line.last == 0x0D { line = UnsafeRawBufferPointer(rebasing: line.dropLast()) }
        do throws(ProtocolError) {
            guard line.count <= maxLineBytes else { throw lineTooLong }
            if line.allSatisfy({ $0 == 0x20 || $0 == 0x09 }) { return }
            try publication.publish(try PublishedValue.parse(line, maxDepth: publication.maxDepth))
        } catch {
            fail(error)
        }
    }

    private var lineTooLong: ProtocolError {
        ProtocolError(.lineTooLong, "a line is over max_line_bytes (\(maxLineBytes))")
    }

    private func fail(_ error: ProtocolError) {
        failed = true
        partial = []
        publication.fail(error)
    }
}
