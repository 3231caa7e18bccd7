/// A byte stream a line protocol reads: one with a connection's configuration, whose line
/// limits its `LineReader` takes: a `TCPConnection`.
public protocol LineConnection: ByteStream {
    var configuration: TCPConnection.Configuration { get }
}

extension LineConnection {
    /// Makes `delegate` the receiver of this connection's lines: a `LineReader` with the
    /// configuration's line limits becomes the connection's delegate (nil: no delegate).
    /// Loop thread.
    public func readLines(into delegate: (any LineReaderDelegate)?) {
        self.delegate = delegate.map {
            LineReader(
                delegate: $0, maxLineLength: configuration.maxLineLength,
                deliversTLSHelloAsLine: configuration.deliversTLSHelloAsLine)
        }
    }
}

extension TCPConnection: LineConnection {}
