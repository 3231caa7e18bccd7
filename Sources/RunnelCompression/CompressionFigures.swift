/// A front door's compressed streams, for `stats.compression` and `/metrics`: the WebSockets
/// with permessage-deflate and the gzip'd event streams open now. (The bytes zlib holds are the
/// whole process's, read from `ZlibMemory`.)
///
/// Thread rules: a value. Lifetime rule: holds nothing.
package struct CompressionFigures {
    package let webSockets: Int
    package let eventStreams: Int

    package init(webSockets: Int, eventStreams: Int) {
        self.webSockets = webSockets
        self.eventStreams = eventStreams
    }
}
