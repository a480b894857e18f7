<?php
// Shared by the scripts here: run by tests/integration/test_php_client.py against a
// broker on 127.0.0.1:PORT.  PHP's PECL stomp extension speaks STOMP 1.0.

declare(strict_types=1);

function connect_to(int $port): Stomp
{
    $stomp = new Stomp("tcp://127.0.0.1:$port");
    // Long enough for a loaded test machine; a frame that never comes ends the script.
    $stomp->setReadTimeout(10);
    return $stomp;
}

/** The next MESSAGE frame; fails the script if none comes or another frame does. */
function next_message(Stomp $stomp, string $who): StompFrame
{
    $frame = $stomp->readFrame();
    if ($frame === false) {
        fail("$who: no MESSAGE arrived");
    }
    if ($frame->command !== "MESSAGE") {
        fail("$who: expected MESSAGE, got " . $frame->command . ": " . json_encode($frame->headers));
    }
    return $frame;
}

function fail(string $why): never
{
    fwrite(STDERR, $why . "\n");
    exit(1);
}

function report(array $result): void
{
    echo json_encode($result), "\n";
}
