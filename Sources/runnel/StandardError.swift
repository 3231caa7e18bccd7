import Glibc

/// Unbuffered writes to stderr (fd 2), so messages appear at once and in order with stdout.
enum StandardError {
    static func write(_ text: String) {
        var text = text
        _ = text.withUTF8 { FileDescriptorWriter.writeAll(2, UnsafeRawBufferPointer($0)) }
    }
}
