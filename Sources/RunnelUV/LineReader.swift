/// The line framing a line protocol puts in front of its handler: a `ByteStream`'s delegate
/// that splits the bytes read into lines with a `LineFramer` and hands each to its own
/// delegate. Lines wholly inside one read point straight into the loop's read buffer; only a
/// line cut by a read's end is copied. A line longer than `maxLineLength` is thrown away as it
/// streams in and reported with `didDiscardLongLine`. Lines go on only while the stream is
/// open: the rest of a read after a close is dropped.
///
/// With `deliversTLSHelloAsLine`, a first read that starts like a TLS handshake (byte 0x16,
/// which no text line starts with) goes to the delegate at once as one line, instead of
/// waiting for a `\n` a TLS client never sends: a plaintext line protocol then answers it (an
/// error the client's TLS library reports at once) instead of leaving the client hanging.
/// Otherwise the first line goes to `didReadFirstLine`, so a protocol can tell from it what
/// spoke to it (the line port answers an HTTP request line in HTTP); the reads until it has
/// come take a path of their own, and the others cost what they did, one branch per read.
///
/// Thread rules: the stream's loop thread only. Lifetime rule: the stream holds it as its
/// delegate until it has closed; it holds its own delegate (a `let`, so a line reaches it
/// without a retain and release) until it goes; its framer's memory is freed in `deinit`.
public final class LineReader: ByteStreamDelegate {
    /// Receives the lines.
    public let delegate: any LineReaderDelegate
    private let deliversTLSHelloAsLine: Bool
    /// Nothing has been read yet (see `deliversTLSHelloAsLine`).
    private var awaitsFirstRead = true
    /// No line has gone to the delegate yet: the next goes to `didReadFirstLine`.
    private var awaitsFirstLine = true
    /// Behind a pointer: it is mutated per read while it calls the delegate, which may call back
    /// into the stream (a close) and so into this reader.
    private let framer: UnsafeMutablePointer<LineFramer>

    public init(delegate: any LineReaderDelegate, maxLineLength: Int, deliversTLSHelloAsLine: Bool = false) {
        self.delegate = delegate
        self.deliversTLSHelloAsLine = deliversTLSHelloAsLine
        framer = .allocate(capacity: 1)
        framer.initialize(to: LineFramer(maxLineLength: maxLineLength))
    }

    deinit {
        framer.deinitialize(count: 1)
        framer.deallocate()
    }

    public func connection(_ connection: any ByteStream, didRead bytes: UnsafeRawBufferPointer) {
        var bytes = bytes
        if awaitsFirstLine {
            let consumed = readFirstLine(bytes, from: connection)
            bytes = UnsafeRawBufferPointer(rebasing: bytes[consumed...])
        }
        framer.pointee.consume(bytes) { piece in
            // One check per line, before it is handled: once the stream is not open (say the
            // delegate closed it on the previous line), the rest of the read is dropped.
            guard connection.isOpen else { return false }
            switch piece {
            case .line(let line): delegate.connection(connection, didReadLine: line)
            case .tooLong(let count): delegate.connection(connection, didDiscardLongLine: count)
            }
            return true
        }
    }

    /// The reads until the first line has come: the first read's TLS check, then `bytes` framed
    /// up to the end of the first line, which goes to `didReadFirstLine` (a first line too
    /// long to keep is reported as any other). Returns how many bytes it consumed: the rest
    /// is framed as usual.
    @inline(never)
    private func readFirstLine(_ bytes: UnsafeRawBufferPointer, from connection: any ByteStream) -> Int {
        if awaitsFirstRead {
            awaitsFirstRead = false
            if deliversTLSHelloAsLine, bytes.first == 0x16 {
                awaitsFirstLine = false
                delegate.connection(connection, didReadLine: bytes)
                return bytes.count
            }
        }
        return framer.pointee.consume(bytes) { piece in
            awaitsFirstLine = false
            switch piece {
            case .line(let line): delegate.connection(connection, didReadFirstLine: line)
            case .tooLong(let count): delegate.connection(connection, didDiscardLongLine: count)
            }
            return false
        }
    }

    public func connectionDidEndInput(_ connection: any ByteStream) { delegate.connectionDidEndInput(connection) }

    public func connectionDidClose(_ connection: any ByteStream) {
        framer.pointee.reset()
        delegate.connectionDidClose(connection)
    }
}

/// Receives a `LineReader`'s lines: the hot path of a line protocol's input.
///
/// Every method is called on the stream's loop thread. A line's bytes are valid only during
/// the call (they may point into the loop's read buffer): copy what must be kept. Lines come
/// without their `\n` and without a `\r` just before it.
public protocol LineReaderDelegate: AnyObject {
    /// One complete line arrived.
    func connection(_ connection: any ByteStream, didReadLine line: UnsafeRawBufferPointer)
    /// The connection's first line arrived (no other line reaches `didReadLine` before it):
    /// by default, handed to `didReadLine` like the rest.
    func connection(_ connection: any ByteStream, didReadFirstLine line: UnsafeRawBufferPointer)
    /// A line longer than the reader's maximum was thrown away as it streamed in;
    /// `byteCount` is its length (without the `\n`).
    func connection(_ connection: any ByteStream, didDiscardLongLine byteCount: Int)
    /// The peer finished sending (see `ByteStreamDelegate.connectionDidEndInput`).
    func connectionDidEndInput(_ connection: any ByteStream)
    /// The stream closed. Called once, last.
    func connectionDidClose(_ connection: any ByteStream)
}

extension LineReaderDelegate {
    public func connection(_ connection: any ByteStream, didReadFirstLine line: UnsafeRawBufferPointer) {
        self.connection(connection, didReadLine: line)
    }
    public func connection(_ connection: any ByteStream, didDiscardLongLine byteCount: Int) {}
    public func connectionDidEndInput(_ connection: any ByteStream) {}
    public func connectionDidClose(_ connection: any ByteStream) {}
}
