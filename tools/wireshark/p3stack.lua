-- p3stack.lua - Wireshark/tshark dissector for the p3stack rmpp protocol and
-- the Portals 3.3 header it carries.
--
--   tshark -X lua_script:tools/wireshark/p3stack.lua -r capture.pcap
--   wireshark -X lua_script:tools/wireshark/p3stack.lua capture.pcap
--
-- rmpp runs over raw Ethernet (EtherType 0x88B5) and over UDP (found by a
-- heuristic: version nibble 1, known type, consistent lengths; or force a
-- port with "Decode As" / -d udp.port==N,p3stack).  Field names are
-- p3stack.<name> with the same names and order as `ptldump -F`, all decimal,
-- so both decoders can be compared field by field.  The layout is documented
-- in rmpp/rmpp_wire.h and portals/hdr.c.

local p = Proto("p3stack", "p3stack RMPP")

local TYPES = { [1] = "HELLO", [2] = "HELLO_ACK", [3] = "DATA", [4] = "ACK", [5] = "PROBE",
                [6] = "RESET", [7] = "CLOSE" }
local MOPS = { [1] = "EAGER_FIRST", [2] = "EAGER_CONT", [3] = "RTS", [4] = "CTS", [5] = "RDATA",
               [6] = "DONE", [7] = "RNR", [8] = "NAK" }
local PTL = { [1] = "PUT", [2] = "GET", [3] = "GETPUT", [4] = "ACK", [5] = "REPLY" }
local FLAG_NAMES = { { 0x01, "ACK_VALID" }, { 0x02, "SACK" }, { 0x04, "RETX" }, { 0x08, "ACK_REQ" },
                     { 0x10, "CRC" }, { 0x20, "MSG" }, { 0x40, "DSACK" }, { 0x80, "ECE" } }
local F_SACK, F_MSG = 0x02, 0x20
local HDR_LEN, MSGHDR_LEN, PTLHDR_LEN = 40, 24, 104

local function u(name, bits, desc)
  local ctor = ({ [8] = ProtoField.uint8, [16] = ProtoField.uint16, [32] = ProtoField.uint32,
                  [64] = ProtoField.uint64 })[bits]
  return ctor("p3stack." .. name, desc or name, base.DEC)
end

-- The field list, in ptldump -F order.
local f = {
  version = u("version", 8), type = u("type", 8), flags = u("flags", 8),
  payload_len = u("payload_len", 16), dst_ep = u("dst_ep", 16), src_ep = u("src_ep", 16),
  src_epoch = u("src_epoch", 32), dst_epoch = u("dst_epoch", 32), psn = u("psn", 32),
  ack_psn = u("ack_psn", 32), credit = u("credit", 16), ext_words = u("ext_words", 8),
  sack_n = u("sack_n", 8), tsval = u("tsval", 32), tsecr = u("tsecr", 32), crc = u("crc", 32),
  sack_start = u("sack_start", 32), sack_end = u("sack_end", 32),
  msn = u("msn", 32), mop = u("mop", 8), mflags = u("mflags", 8), ptlhdr_len = u("ptlhdr_len", 16),
  msg_len = u("msg_len", 32), offset = u("offset", 32), arg = u("arg", 32), handle = u("handle", 32),
  hello_magic = u("hello_magic", 32), hello_mtu = u("hello_mtu", 16), hello_flags = u("hello_flags", 16),
  ptl_type = u("ptl_type", 8), ptl_src_nid = u("ptl_src_nid", 32), ptl_src_pid = u("ptl_src_pid", 32),
  ptl_dst_nid = u("ptl_dst_nid", 32), ptl_dst_pid = u("ptl_dst_pid", 32), ptl_uid = u("ptl_uid", 32),
  ptl_jid = u("ptl_jid", 32), ptl_pt = u("ptl_pt", 32), ptl_ac = u("ptl_ac", 32), ptl_md = u("ptl_md", 32),
  ptl_match_bits = u("ptl_match_bits", 64), ptl_hdr_data = u("ptl_hdr_data", 64),
  ptl_remote_offset = u("ptl_remote_offset", 64), ptl_rlength = u("ptl_rlength", 64),
  ptl_mlength = u("ptl_mlength", 64), ptl_payload_len = u("ptl_payload_len", 64),
  ptl_md_offset = u("ptl_md_offset", 64), data_len = u("data_len", 32),
}
p.fields = {}
for _, v in pairs(f) do table.insert(p.fields, v) end

-- Wireshark's Lua is 5.2: bit operations come from bit32.
local band = bit32.band

local function flags_str(fl)
  local out = {}
  for _, fn in ipairs(FLAG_NAMES) do
    if band(fl, fn[1]) ~= 0 then table.insert(out, fn[2]) end
  end
  return #out > 0 and table.concat(out, "|") or "-"
end

-- Structural check shared by the heuristic and the dissector.
local function plausible(tvb)
  local len = tvb:len()
  if len < HDR_LEN then return false end
  local vt = tvb(0, 1):uint()
  local ver, typ = math.floor(vt / 16), vt % 16
  if ver ~= 1 or TYPES[typ] == nil then return false end
  local fl = tvb(1, 1):uint()
  local ext = tvb(26, 1):uint()
  local sack_n = tvb(27, 1):uint()
  local has_msg = band(fl, F_MSG) ~= 0
  if sack_n > 4 or ext ~= 2 * sack_n + (has_msg and MSGHDR_LEN / 4 or 0) then return false end
  return HDR_LEN + 4 * ext + tvb(2, 2):uint() <= len
end

function p.dissector(tvb, pinfo, tree)
  if not plausible(tvb) then return 0 end
  pinfo.cols.protocol = "P3STACK"
  local vt = tvb(0, 1):uint()
  local typ = vt % 16
  local fl = tvb(1, 1):uint()
  local plen = tvb(2, 2):uint()
  local sack_n = tvb(27, 1):uint()
  local ext = tvb(26, 1):uint()
  local hlen = HDR_LEN + 4 * ext
  local t = tree:add(p, tvb(0, hlen + plen), "p3stack RMPP " .. TYPES[typ])
  t:add(f.version, tvb(0, 1), math.floor(vt / 16))
  t:add(f.type, tvb(0, 1), typ):append_text(" (" .. TYPES[typ] .. ")")
  t:add(f.flags, tvb(1, 1)):append_text(" (" .. flags_str(fl) .. ")")
  t:add(f.payload_len, tvb(2, 2))
  t:add(f.dst_ep, tvb(4, 2))
  t:add(f.src_ep, tvb(6, 2))
  t:add(f.src_epoch, tvb(8, 4))
  t:add(f.dst_epoch, tvb(12, 4))
  t:add(f.psn, tvb(16, 4))
  t:add(f.ack_psn, tvb(20, 4))
  t:add(f.credit, tvb(24, 2))
  t:add(f.ext_words, tvb(26, 1))
  t:add(f.sack_n, tvb(27, 1))
  t:add(f.tsval, tvb(28, 4))
  t:add(f.tsecr, tvb(32, 4))
  t:add(f.crc, tvb(36, 4))
  local info = string.format("%s psn=%u ack=%u cr=%u", TYPES[typ], tvb(16, 4):uint(),
                             tvb(20, 4):uint(), tvb(24, 2):uint())
  local q = HDR_LEN
  for i = 1, sack_n do
    t:add(f.sack_start, tvb(q, 4))
    t:add(f.sack_end, tvb(q + 4, 4))
    info = info .. string.format(" sack[%u,%u)", tvb(q, 4):uint(), tvb(q + 4, 4):uint())
    q = q + 8
  end
  local payload = hlen
  local data_len = 0
  if band(fl, F_MSG) ~= 0 then
    local mop = tvb(q + 4, 1):uint()
    local ptlhdr_len = tvb(q + 6, 2):uint()
    local m = t:add(tvb(q, MSGHDR_LEN), "Message " .. (MOPS[mop] or "?"))
    m:add(f.msn, tvb(q, 4))
    m:add(f.mop, tvb(q + 4, 1)):append_text(" (" .. (MOPS[mop] or "?") .. ")")
    m:add(f.mflags, tvb(q + 5, 1))
    m:add(f.ptlhdr_len, tvb(q + 6, 2))
    m:add(f.msg_len, tvb(q + 8, 4))
    m:add(f.offset, tvb(q + 12, 4))
    m:add(f.arg, tvb(q + 16, 4))
    m:add(f.handle, tvb(q + 20, 4))
    info = info .. string.format(" | msn=%u %s", tvb(q, 4):uint(), MOPS[mop] or "?")
    if ptlhdr_len <= plen then data_len = plen - ptlhdr_len end
    -- the Portals header, then any ACK headers carried along (nal/rmpp)
    local nhdr = 0
    if ptlhdr_len > 0 and ptlhdr_len % PTLHDR_LEN == 0 then nhdr = ptlhdr_len / PTLHDR_LEN end
    for k = 0, nhdr - 1 do
      local b = payload + k * PTLHDR_LEN
      if tvb(b, 1):uint() ~= 1 then break end
      local pt = tvb(b + 1, 1):uint()
      local label = k == 0 and "Portals " or "Portals (carried) "
      local ph = t:add(tvb(b, PTLHDR_LEN), label .. (PTL[pt] or "?"))
      ph:add(f.ptl_type, tvb(b + 1, 1)):append_text(" (" .. (PTL[pt] or "?") .. ")")
      ph:add(f.ptl_src_nid, tvb(b + 4, 4))
      ph:add(f.ptl_src_pid, tvb(b + 8, 4))
      ph:add(f.ptl_dst_nid, tvb(b + 12, 4))
      ph:add(f.ptl_dst_pid, tvb(b + 16, 4))
      ph:add(f.ptl_uid, tvb(b + 20, 4))
      ph:add(f.ptl_jid, tvb(b + 24, 4))
      ph:add(f.ptl_pt, tvb(b + 28, 4))
      ph:add(f.ptl_ac, tvb(b + 32, 4))
      ph:add(f.ptl_md, tvb(b + 36, 4))
      ph:add(f.ptl_match_bits, tvb(b + 40, 8))
      ph:add(f.ptl_hdr_data, tvb(b + 48, 8))
      ph:add(f.ptl_remote_offset, tvb(b + 56, 8))
      ph:add(f.ptl_rlength, tvb(b + 64, 8))
      ph:add(f.ptl_mlength, tvb(b + 72, 8))
      ph:add(f.ptl_payload_len, tvb(b + 80, 8))
      ph:add(f.ptl_md_offset, tvb(b + 88, 8))
      info = info .. (k == 0 and " | " or " +") .. (PTL[pt] or "?")
    end
  elseif typ == 1 or typ == 2 then
    if plen >= 8 then
      t:add(f.hello_magic, tvb(payload, 4))
      t:add(f.hello_mtu, tvb(payload + 4, 2))
      t:add(f.hello_flags, tvb(payload + 6, 2))
    end
  end
  t:add(f.data_len, tvb(payload, 0), data_len)
  pinfo.cols.info = info
  return hlen + plen
end

-- A UDP GSO send (rmpp GSO=1) is captured as one datagram holding a run of
-- frames, all as long as the first but the last (the kernel cuts it after
-- the capture point): dissect every frame of it.  Not after a HELLO, which
-- path-MTU probes pad.
local function heuristic(tvb, pinfo, tree)
  if not plausible(tvb) then return false end
  local seg = p.dissector(tvb, pinfo, tree)
  local typ = tvb(0, 1):uint() % 16
  if seg > 0 and typ ~= 1 and typ ~= 2 then
    local off, n = seg, 1
    while off + HDR_LEN <= tvb:len() do
      local sub = tvb(off, math.min(seg, tvb:len() - off)):tvb()
      if not plausible(sub) then break end
      p.dissector(sub, pinfo, tree)
      off, n = off + seg, n + 1
    end
    if n > 1 then
      pinfo.cols.info = string.format("GSO %u frames, the last: %s", n, tostring(pinfo.cols.info))
    end
  end
  return true
end

DissectorTable.get("ethertype"):add(0x88B5, p)
p:register_heuristic("udp", heuristic)
