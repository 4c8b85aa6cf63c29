import Foundation

/// Reads a plist file with Python's `plistlib`, a reader independent of ours, and returns `expression`
/// (over the loaded value `d`) as JSON with sorted keys. Shared by the library's and the command's tests.
public func pythonPlist(_ path: String, expression: String = "d") throws -> String {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
    process.arguments = [
        "python3", "-c",
        "import plistlib,sys,json,datetime\nd=plistlib.load(open(sys.argv[1],'rb'))\n"
            + "print(json.dumps(\(expression), sort_keys=True, default=str))",
        path,
    ]
    let pipe = Pipe()
    process.standardOutput = pipe
    try process.run()
    let output = pipe.fileHandleForReading.readDataToEndOfFile()
    process.waitUntilExit()
    return String(decoding: output, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
}
