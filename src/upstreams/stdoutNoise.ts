/**
 * SDK workaround: the SDK's `StdioClientTransport` drops stdout lines that
 * are not JSON without a word (its `ReadBuffer` skips a `SyntaxError`), so an
 * upstream that prints a banner or a log line to stdout looks exactly like
 * one that never answers ("connecting timed out"). This taps the child's
 * stdout to say what it wrote instead. The child process is
 * the transport's private `_process`: there is no public hook; the test in
 * test/aggregator/stdout-noise.integration.test.ts fails if the SDK changes that.
 */
import type { ChildProcess } from 'node:child_process';
import { StringDecoder } from 'node:string_decoder';
import type { StdioClientTransport } from '@modelcontextprotocol/client/stdio';

/** How much of the first non-protocol line is kept for the message. */
const SAMPLE_CHARS = 120;

/** What a child wrote to stdout that is not a JSON-RPC message. */
export interface StdoutNoise {
  /** The first such line: escaped, at most {@link SAMPLE_CHARS} characters. */
  first: string;
  /** How many such lines so far. */
  lines: number;
}

/**
 * Calls `onNoise` for each stdout line of the transport's child that cannot
 * be a JSON-RPC message (it does not start with `{` or `[`). Only the first
 * byte of each line is looked at, so large messages cost one scan for
 * newlines and nothing is buffered twice.
 *
 * The SDK first probes the protocol era on a disposable sibling process,
 * built with `new transport.constructor(params)` (its version-negotiation
 * sibling flow): that constructor is shadowed on this instance so the
 * sibling is tapped too — a server that prints a banner fails right there.
 * The prototype is left alone, so the SDK still takes the sibling path.
 */
export function tapStdoutNoise(transport: StdioClientTransport, onNoise: (noise: StdoutNoise) => void): void {
  tapStart(transport, onNoise);
  const Base = Object.getPrototypeOf(transport).constructor as new (params: unknown) => StdioClientTransport;
  function TappedSibling(params: unknown): StdioClientTransport {
    const sibling = new Base(params);
    tapStart(sibling, onNoise);
    return sibling;
  }
  Object.defineProperty(transport, 'constructor', { value: TappedSibling, configurable: true, writable: true });
}

function tapStart(transport: StdioClientTransport, onNoise: (noise: StdoutNoise) => void): void {
  const start = transport.start.bind(transport);
  transport.start = async () => {
    await start();
    // 'spawn' resolved start(); no stdout chunk can have been read before this continuation runs.
    const child = (transport as unknown as { _process?: ChildProcess })._process;
    child?.stdout?.on('data', lineWatcher(onNoise));
  };
}

function lineWatcher(onNoise: (noise: StdoutNoise) => void): (chunk: Buffer) => void {
  let atLineStart = true;
  let noisy = false; // the current line is noise
  let sample = '';
  let first: string | undefined;
  let lines = 0;
  const decoder = new StringDecoder('utf8'); // a character split across chunks stays one character
  const endLine = () => {
    if (noisy) {
      lines += 1;
      first ??= escape(sample);
      onNoise({ first, lines });
    }
    noisy = false;
    sample = '';
    atLineStart = true;
  };
  return (chunk) => {
    const text = decoder.write(chunk);
    for (let index = 0; index < text.length; index++) {
      const char = text[index]!;
      if (char === '\n') {
        endLine();
        continue;
      }
      if (atLineStart) {
        if (char === ' ' || char === '\t' || char === '\r') continue; // leading blanks: not decided yet
        atLineStart = false;
        noisy = char !== '{' && char !== '[';
      }
      if (noisy && sample.length < SAMPLE_CHARS) sample += char;
    }
  };
}

/** Control characters as escapes, so the sample is one printable log line. */
function escape(text: string): string {
  const escaped = JSON.stringify(text.replace(/\r$/, '')).slice(1, -1);
  return escaped.length > SAMPLE_CHARS ? `${escaped.slice(0, SAMPLE_CHARS)}…` : escaped;
}
