<?php
// One message sent with a receipt, and received by a subscriber on another connection.
// Usage: php send_receive.php PORT DESTINATION

declare(strict_types=1);
require __DIR__ . "/common.php";

[, $port, $destination] = $argv;
$consumer = connect_to((int) $port);
$consumer->subscribe($destination, ["receipt" => "sub"]);
$producer = connect_to((int) $port);
$producer->send($destination, "hello from php", ["receipt" => "sent", "color" => "blue"]);
$frame = next_message($consumer, "consumer");
report(["body" => $frame->body, "color" => $frame->headers["color"] ?? null]);
