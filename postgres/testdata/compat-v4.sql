--
-- PostgreSQL database dump
--


-- Dumped from database version 15.20 (Debian 15.20-0+deb12u1)
-- Dumped by pg_dump version 15.20 (Debian 15.20-0+deb12u1)

SET statement_timeout = 0;
SET lock_timeout = 0;
SET idle_in_transaction_session_timeout = 0;
SET client_encoding = 'UTF8';
SET standard_conforming_strings = on;
SELECT pg_catalog.set_config('search_path', '', false);
SET check_function_bodies = false;
SET xmloption = content;
SET client_min_messages = warning;
SET row_security = off;

--
-- Name: llmfleet_compat; Type: SCHEMA; Schema: -; Owner: -
--

CREATE SCHEMA llmfleet_compat;


SET default_tablespace = '';

SET default_table_access_method = heap;

--
-- Name: batch_owners; Type: TABLE; Schema: llmfleet_compat; Owner: -
--

CREATE TABLE llmfleet_compat.batch_owners (
    batch_id text NOT NULL,
    owner text NOT NULL,
    at bigint NOT NULL
);


--
-- Name: batches; Type: TABLE; Schema: llmfleet_compat; Owner: -
--

CREATE TABLE llmfleet_compat.batches (
    id text NOT NULL,
    provider text NOT NULL,
    credential_id text NOT NULL,
    upstream_id text,
    state text NOT NULL,
    size integer NOT NULL,
    intent_at bigint,
    created_at bigint,
    ended_at bigint,
    create_deadline bigint,
    owner text DEFAULT ''::text NOT NULL
);


--
-- Name: cache_stats; Type: TABLE; Schema: llmfleet_compat; Owner: -
--

CREATE TABLE llmfleet_compat.cache_stats (
    provider text NOT NULL,
    model text NOT NULL,
    credential_id text NOT NULL,
    lookup text NOT NULL,
    entry text NOT NULL,
    lookups bigint NOT NULL,
    hits bigint NOT NULL
);


--
-- Name: credentials; Type: TABLE; Schema: llmfleet_compat; Owner: -
--

CREATE TABLE llmfleet_compat.credentials (
    id text NOT NULL,
    sealed bytea NOT NULL
);


--
-- Name: ledger; Type: TABLE; Schema: llmfleet_compat; Owner: -
--

CREATE TABLE llmfleet_compat.ledger (
    seq bigint NOT NULL,
    "time" bigint NOT NULL,
    entry bytea NOT NULL
);


--
-- Name: ledger_seq_seq; Type: SEQUENCE; Schema: llmfleet_compat; Owner: -
--

CREATE SEQUENCE llmfleet_compat.ledger_seq_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1;


--
-- Name: ledger_seq_seq; Type: SEQUENCE OWNED BY; Schema: llmfleet_compat; Owner: -
--

ALTER SEQUENCE llmfleet_compat.ledger_seq_seq OWNED BY llmfleet_compat.ledger.seq;


--
-- Name: llmfleet_migrations; Type: TABLE; Schema: llmfleet_compat; Owner: -
--

CREATE TABLE llmfleet_compat.llmfleet_migrations (
    version integer NOT NULL
);


--
-- Name: prefixes; Type: TABLE; Schema: llmfleet_compat; Owner: -
--

CREATE TABLE llmfleet_compat.prefixes (
    credential_id text NOT NULL,
    hash text NOT NULL,
    tokens bigint NOT NULL,
    sync_until bigint,
    batch_until bigint,
    seen_at bigint
);


--
-- Name: replicas; Type: TABLE; Schema: llmfleet_compat; Owner: -
--

CREATE TABLE llmfleet_compat.replicas (
    id text NOT NULL,
    name text NOT NULL,
    started_at timestamp with time zone NOT NULL,
    lease_until timestamp with time zone NOT NULL
);


--
-- Name: requests; Type: TABLE; Schema: llmfleet_compat; Owner: -
--

CREATE TABLE llmfleet_compat.requests (
    id text NOT NULL,
    provider text NOT NULL,
    credential_id text NOT NULL,
    header bytea,
    body bytea NOT NULL,
    model text NOT NULL,
    budget bigint NOT NULL,
    accepted_at bigint,
    deadline bigint,
    state text NOT NULL,
    batch_id text,
    custom_id text,
    status_code integer,
    result_body bytea,
    result_error bytea,
    usage bytea,
    completed_at bigint,
    client text DEFAULT ''::text NOT NULL,
    endpoint text DEFAULT ''::text NOT NULL,
    pool text DEFAULT ''::text NOT NULL,
    owner text DEFAULT ''::text NOT NULL,
    result_batch_id text
);


--
-- Name: turnarounds; Type: TABLE; Schema: llmfleet_compat; Owner: -
--

CREATE TABLE llmfleet_compat.turnarounds (
    seq bigint NOT NULL,
    provider text NOT NULL,
    model text NOT NULL,
    size integer NOT NULL,
    turnaround bigint NOT NULL,
    at bigint NOT NULL
);


--
-- Name: turnarounds_seq_seq; Type: SEQUENCE; Schema: llmfleet_compat; Owner: -
--

CREATE SEQUENCE llmfleet_compat.turnarounds_seq_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1;


--
-- Name: turnarounds_seq_seq; Type: SEQUENCE OWNED BY; Schema: llmfleet_compat; Owner: -
--

ALTER SEQUENCE llmfleet_compat.turnarounds_seq_seq OWNED BY llmfleet_compat.turnarounds.seq;


--
-- Name: ledger seq; Type: DEFAULT; Schema: llmfleet_compat; Owner: -
--

ALTER TABLE ONLY llmfleet_compat.ledger ALTER COLUMN seq SET DEFAULT nextval('llmfleet_compat.ledger_seq_seq'::regclass);


--
-- Name: turnarounds seq; Type: DEFAULT; Schema: llmfleet_compat; Owner: -
--

ALTER TABLE ONLY llmfleet_compat.turnarounds ALTER COLUMN seq SET DEFAULT nextval('llmfleet_compat.turnarounds_seq_seq'::regclass);


--
-- Data for Name: batch_owners; Type: TABLE DATA; Schema: llmfleet_compat; Owner: -
--

INSERT INTO llmfleet_compat.batch_owners VALUES ('msgbatch_client', 'client-owner', 1795723766894140035);


--
-- Data for Name: batches; Type: TABLE DATA; Schema: llmfleet_compat; Owner: -
--

INSERT INTO llmfleet_compat.batches VALUES ('lfb_compat_1', 'anthropic', 'cred_compat', 'msgbatch_compat_1', 'created', 2, 1770091567789012345, 1770091626789012345, NULL, 1770092167789012345, '');
INSERT INTO llmfleet_compat.batches VALUES ('lfb_compat_2', 'anthropic', 'cred_compat', 'msgbatch_compat_2', 'resolved', 2, 1770091568789012345, 1770091686789012345, 1770098706789012345, 1770092168789012345, '');
INSERT INTO llmfleet_compat.batches VALUES ('lfb_compat_3', 'anthropic', 'cred_compat', NULL, 'intent', 1, 1770091569789012345, NULL, NULL, 1770092169789012345, '');


--
-- Data for Name: cache_stats; Type: TABLE DATA; Schema: llmfleet_compat; Owner: -
--

INSERT INTO llmfleet_compat.cache_stats VALUES ('anthropic', 'claude-sonnet-4-6', 'cred_compat', 'sync', 'batch', 10, 4);
INSERT INTO llmfleet_compat.cache_stats VALUES ('openai', 'gpt-5', 'cred_compat', 'batch', 'batch', 3, 1);


--
-- Data for Name: credentials; Type: TABLE DATA; Schema: llmfleet_compat; Owner: -
--

INSERT INTO llmfleet_compat.credentials VALUES ('cred_compat', '\x7365616c656400ff636f6d706174');


--
-- Data for Name: ledger; Type: TABLE DATA; Schema: llmfleet_compat; Owner: -
--

INSERT INTO llmfleet_compat.ledger VALUES (1, 1770091566789012345, '\x7b22726571756573745f6964223a226c66725f636f6d7061745f35222c2274696d65223a22323032362d30322d30335430343a30363a30362e3738393031323334355a222c2262617463685f6964223a226d736762617463685f636f6d7061745f32222c2270726f7669646572223a22616e7468726f706963222c226d6f64656c223a22636c617564652d736f6e6e65742d342d36222c22726f757465223a226261746368222c226f7574636f6d65223a226f6b222c227573616765223a7b22696e7075745f746f6b656e73223a3130312c226f75747075745f746f6b656e73223a372c2263616368655f6372656174696f6e5f696e7075745f746f6b656e73223a302c2263616368655f726561645f696e7075745f746f6b656e73223a302c2263616368655f6372656174696f6e223a7b22657068656d6572616c5f356d5f696e7075745f746f6b656e73223a302c22657068656d6572616c5f31685f696e7075745f746f6b656e73223a307d7d2c22636f73745f757364223a302e3030312c226f746865725f726f7574655f757364223a302e3030322c22707269636564223a747275652c227175657565645f6e73223a313030303030303030302c227475726e61726f756e645f6e73223a36303030303030303030302c226c6174656e63795f6e73223a3132303030303030303030302c226275646765745f6e73223a333630303030303030303030302c226275646765745f6d6574223a66616c73652c22636c69656e74223a22636c69656e742d31227d');
INSERT INTO llmfleet_compat.ledger VALUES (2, 1770091626789012345, '\x7b22726571756573745f6964223a226c66725f636f6d7061745f36222c2274696d65223a22323032362d30322d30335430343a30373a30362e3738393031323334355a222c2262617463685f6964223a226d736762617463685f636f6d7061745f32222c2270726f7669646572223a22616e7468726f706963222c226d6f64656c223a22636c617564652d736f6e6e65742d342d36222c22726f757465223a226261746368222c226f7574636f6d65223a226f6b222c227573616765223a7b22696e7075745f746f6b656e73223a3130322c226f75747075745f746f6b656e73223a372c2263616368655f6372656174696f6e5f696e7075745f746f6b656e73223a302c2263616368655f726561645f696e7075745f746f6b656e73223a302c2263616368655f6372656174696f6e223a7b22657068656d6572616c5f356d5f696e7075745f746f6b656e73223a302c22657068656d6572616c5f31685f696e7075745f746f6b656e73223a307d7d2c22636f73745f757364223a302e3030322c226f746865725f726f7574655f757364223a302e3030342c22707269636564223a747275652c227175657565645f6e73223a313030303030303030302c227475726e61726f756e645f6e73223a36303030303030303030302c226c6174656e63795f6e73223a3132303030303030303030302c226275646765745f6e73223a333630303030303030303030302c226275646765745f6d6574223a747275652c22636c69656e74223a22636c69656e742d31227d');
INSERT INTO llmfleet_compat.ledger VALUES (3, 1770091686789012345, '\x7b2274696d65223a22323032362d30322d30335430343a30383a30362e3738393031323334355a222c2270726f7669646572223a22616e7468726f706963222c226d6f64656c223a22636c617564652d736f6e6e65742d342d36222c22726f757465223a22666c6578222c226f7574636f6d65223a226f6b222c227573616765223a7b22696e7075745f746f6b656e73223a3130332c226f75747075745f746f6b656e73223a372c2263616368655f6372656174696f6e5f696e7075745f746f6b656e73223a302c2263616368655f726561645f696e7075745f746f6b656e73223a302c2263616368655f6372656174696f6e223a7b22657068656d6572616c5f356d5f696e7075745f746f6b656e73223a302c22657068656d6572616c5f31685f696e7075745f746f6b656e73223a307d7d2c22636f73745f757364223a302e3030332c226f746865725f726f7574655f757364223a302e3030362c22707269636564223a747275652c227175657565645f6e73223a313030303030303030302c227475726e61726f756e645f6e73223a36303030303030303030302c226c6174656e63795f6e73223a3132303030303030303030302c226275646765745f6e73223a333630303030303030303030302c226275646765745f6d6574223a66616c73652c22726573637565223a2273796e63222c22636c69656e74223a22636c69656e742d31222c2274696572223a227374616e64617264227d');
INSERT INTO llmfleet_compat.ledger VALUES (4, 1770091746789012345, '\x7b22726571756573745f6964223a226c66725f636f6d7061745f38222c2274696d65223a22323032362d30322d30335430343a30393a30362e3738393031323334355a222c2262617463685f6964223a226d736762617463685f636f6d7061745f32222c2270726f7669646572223a22616e7468726f706963222c226d6f64656c223a22636c617564652d736f6e6e65742d342d36222c22726f757465223a226261746368222c226f7574636f6d65223a226f6b222c227573616765223a7b22696e7075745f746f6b656e73223a3130342c226f75747075745f746f6b656e73223a372c2263616368655f6372656174696f6e5f696e7075745f746f6b656e73223a302c2263616368655f726561645f696e7075745f746f6b656e73223a302c2263616368655f6372656174696f6e223a7b22657068656d6572616c5f356d5f696e7075745f746f6b656e73223a302c22657068656d6572616c5f31685f696e7075745f746f6b656e73223a307d7d2c22636f73745f757364223a302e3030342c226f746865725f726f7574655f757364223a302e3030382c22707269636564223a747275652c227175657565645f6e73223a313030303030303030302c227475726e61726f756e645f6e73223a36303030303030303030302c226c6174656e63795f6e73223a3132303030303030303030302c226275646765745f6e73223a333630303030303030303030302c226275646765745f6d6574223a747275652c22636c69656e74223a22636c69656e742d31222c226d6973735f757364223a302e303030342c2272657772697465223a2263616368655f74746c5f3168222c22657374696d61746564223a747275657d');


--
-- Data for Name: llmfleet_migrations; Type: TABLE DATA; Schema: llmfleet_compat; Owner: -
--

INSERT INTO llmfleet_compat.llmfleet_migrations VALUES (1);
INSERT INTO llmfleet_compat.llmfleet_migrations VALUES (2);
INSERT INTO llmfleet_compat.llmfleet_migrations VALUES (3);
INSERT INTO llmfleet_compat.llmfleet_migrations VALUES (4);


--
-- Data for Name: prefixes; Type: TABLE DATA; Schema: llmfleet_compat; Owner: -
--

INSERT INTO llmfleet_compat.prefixes VALUES ('cred_compat', 'sha256:compat1', 1024, 1770091806789012345, 1770095106789012345, 1770091506789012345);
INSERT INTO llmfleet_compat.prefixes VALUES ('cred_compat', 'sha256:compat2', 0, NULL, 1770095106789012345, 1770091506789012346);


--
-- Data for Name: replicas; Type: TABLE DATA; Schema: llmfleet_compat; Owner: -
--

INSERT INTO llmfleet_compat.replicas VALUES ('compat/d2c0a5e4', 'compat', '2026-11-26 20:09:26.735556+00', '2026-11-26 20:09:26.904262+00');


--
-- Data for Name: requests; Type: TABLE DATA; Schema: llmfleet_compat; Owner: -
--

INSERT INTO llmfleet_compat.requests VALUES ('lfr_compat_1', 'openai', 'cred_compat', '\x7b22416e7468726f7069632d56657273696f6e223a5b22323032332d30362d3031225d2c22582d436f6d706174223a5b2261222c2262225d7d', '\x7b226e223a20312c202274657874223a22636166c3a9205c7530306539227d0a', 'claude-sonnet-4-6', 3600000000000, 1770091507789012345, 1770095107789012345, 'queued', NULL, NULL, NULL, NULL, NULL, NULL, NULL, 'client-1', '/v1/chat/completions', 'pool_compat', 'compat/d2c0a5e4', NULL);
INSERT INTO llmfleet_compat.requests VALUES ('lfr_compat_2', 'anthropic', 'cred_compat', '\x7b22416e7468726f7069632d56657273696f6e223a5b22323032332d30362d3031225d2c22582d436f6d706174223a5b2261222c2262225d7d', '\x7b226e223a20322c202274657874223a22636166c3a9205c7530306539227d0a', 'claude-sonnet-4-6', 7200000000000, 1770091508789012345, 1770098708789012345, 'submitted', NULL, NULL, NULL, NULL, NULL, NULL, NULL, 'client-0', '', 'pool_compat', 'compat/d2c0a5e4', NULL);
INSERT INTO llmfleet_compat.requests VALUES ('lfr_compat_3', 'openai', 'cred_compat', '\x7b22416e7468726f7069632d56657273696f6e223a5b22323032332d30362d3031225d2c22582d436f6d706174223a5b2261222c2262225d7d', '\x7b226e223a20332c202274657874223a22636166c3a9205c7530306539227d0a', 'claude-sonnet-4-6', 10800000000000, 1770091509789012345, 1770102309789012345, 'submitted', 'lfb_compat_1', 'c3', NULL, NULL, NULL, NULL, NULL, 'client-1', '/v1/chat/completions', 'pool_compat', 'compat/d2c0a5e4', NULL);
INSERT INTO llmfleet_compat.requests VALUES ('lfr_compat_4', 'anthropic', 'cred_compat', '\x7b22416e7468726f7069632d56657273696f6e223a5b22323032332d30362d3031225d2c22582d436f6d706174223a5b2261222c2262225d7d', '\x7b226e223a20342c202274657874223a22636166c3a9205c7530306539227d0a', 'claude-sonnet-4-6', 14400000000000, 1770091510789012345, 1770105910789012345, 'submitted', 'lfb_compat_1', 'c4', NULL, NULL, NULL, NULL, NULL, 'client-0', '', 'pool_compat', 'compat/d2c0a5e4', NULL);
INSERT INTO llmfleet_compat.requests VALUES ('lfr_compat_5', 'openai', 'cred_compat', '\x7b22416e7468726f7069632d56657273696f6e223a5b22323032332d30362d3031225d2c22582d436f6d706174223a5b2261222c2262225d7d', '\x7b226e223a20352c202274657874223a22636166c3a9205c7530306539227d0a', 'claude-sonnet-4-6', 18000000000000, 1770091511789012345, 1770109511789012345, 'done', 'lfb_compat_2', 'c5', 200, '\x7b226964223a226d73675f636f6d706174222c2022636f6e74656e74223a5b5d7d0a', '\x6e756c6c', '\x7b22696e7075745f746f6b656e73223a3132302c226f75747075745f746f6b656e73223a372c2263616368655f6372656174696f6e5f696e7075745f746f6b656e73223a302c2263616368655f726561645f696e7075745f746f6b656e73223a31332c2263616368655f6372656174696f6e223a7b22657068656d6572616c5f356d5f696e7075745f746f6b656e73223a302c22657068656d6572616c5f31685f696e7075745f746f6b656e73223a367d7d', 1770095106789012345, 'client-1', '/v1/chat/completions', 'pool_compat', 'compat/d2c0a5e4', 'msgbatch_compat_2');
INSERT INTO llmfleet_compat.requests VALUES ('lfr_compat_6', 'anthropic', 'cred_compat', '\x7b22416e7468726f7069632d56657273696f6e223a5b22323032332d30362d3031225d2c22582d436f6d706174223a5b2261222c2262225d7d', '\x7b226e223a20362c202274657874223a22636166c3a9205c7530306539227d0a', 'claude-sonnet-4-6', 21600000000000, 1770091512789012345, 1770113112789012345, 'done', 'lfb_compat_2', 'c6', 502, '\x3c68746d6c3e3530323c2f68746d6c3e0a', '\x7b226b696e64223a2270726f7669646572222c227374617475735f636f6465223a3530322c2274797065223a226170695f6572726f72222c226d657373616765223a224261642047617465776179222c2262617463685f6964223a226d736762617463685f636f6d7061745f32227d', '\x7b22696e7075745f746f6b656e73223a302c226f75747075745f746f6b656e73223a302c2263616368655f6372656174696f6e5f696e7075745f746f6b656e73223a302c2263616368655f726561645f696e7075745f746f6b656e73223a302c2263616368655f6372656174696f6e223a7b22657068656d6572616c5f356d5f696e7075745f746f6b656e73223a302c22657068656d6572616c5f31685f696e7075745f746f6b656e73223a307d7d', 1770095106789012346, 'client-0', '', 'pool_compat', 'compat/d2c0a5e4', '');
INSERT INTO llmfleet_compat.requests VALUES ('lfr_compat_7', 'openai', 'cred_compat', '\x7b22416e7468726f7069632d56657273696f6e223a5b22323032332d30362d3031225d2c22582d436f6d706174223a5b2261222c2262225d7d', '\x7b226e223a20372c202274657874223a22636166c3a9205c7530306539227d0a', 'claude-sonnet-4-6', 25200000000000, 1770091513789012345, 1770116713789012345, 'submitted', 'lfb_compat_3', 'c7', NULL, NULL, NULL, NULL, NULL, 'client-1', '/v1/chat/completions', 'pool_compat', 'compat/d2c0a5e4', NULL);


--
-- Data for Name: turnarounds; Type: TABLE DATA; Schema: llmfleet_compat; Owner: -
--

INSERT INTO llmfleet_compat.turnarounds VALUES (1, 'anthropic', 'claude-sonnet-4-6', 10, 180000000000, 1770091507789012345);
INSERT INTO llmfleet_compat.turnarounds VALUES (2, 'anthropic', 'claude-sonnet-4-6', 20, 240000000000, 1770091508789012345);
INSERT INTO llmfleet_compat.turnarounds VALUES (3, 'openai', 'gpt-5', 5, 3600000000000, 1770091507789012345);


--
-- Name: ledger_seq_seq; Type: SEQUENCE SET; Schema: llmfleet_compat; Owner: -
--

SELECT pg_catalog.setval('llmfleet_compat.ledger_seq_seq', 4, true);


--
-- Name: turnarounds_seq_seq; Type: SEQUENCE SET; Schema: llmfleet_compat; Owner: -
--

SELECT pg_catalog.setval('llmfleet_compat.turnarounds_seq_seq', 3, true);


--
-- Name: batch_owners batch_owners_pkey; Type: CONSTRAINT; Schema: llmfleet_compat; Owner: -
--

ALTER TABLE ONLY llmfleet_compat.batch_owners
    ADD CONSTRAINT batch_owners_pkey PRIMARY KEY (batch_id);


--
-- Name: batches batches_pkey; Type: CONSTRAINT; Schema: llmfleet_compat; Owner: -
--

ALTER TABLE ONLY llmfleet_compat.batches
    ADD CONSTRAINT batches_pkey PRIMARY KEY (id);


--
-- Name: cache_stats cache_stats_pkey; Type: CONSTRAINT; Schema: llmfleet_compat; Owner: -
--

ALTER TABLE ONLY llmfleet_compat.cache_stats
    ADD CONSTRAINT cache_stats_pkey PRIMARY KEY (provider, model, credential_id, lookup, entry);


--
-- Name: credentials credentials_pkey; Type: CONSTRAINT; Schema: llmfleet_compat; Owner: -
--

ALTER TABLE ONLY llmfleet_compat.credentials
    ADD CONSTRAINT credentials_pkey PRIMARY KEY (id);


--
-- Name: ledger ledger_pkey; Type: CONSTRAINT; Schema: llmfleet_compat; Owner: -
--

ALTER TABLE ONLY llmfleet_compat.ledger
    ADD CONSTRAINT ledger_pkey PRIMARY KEY (seq);


--
-- Name: llmfleet_migrations llmfleet_migrations_pkey; Type: CONSTRAINT; Schema: llmfleet_compat; Owner: -
--

ALTER TABLE ONLY llmfleet_compat.llmfleet_migrations
    ADD CONSTRAINT llmfleet_migrations_pkey PRIMARY KEY (version);


--
-- Name: prefixes prefixes_pkey; Type: CONSTRAINT; Schema: llmfleet_compat; Owner: -
--

ALTER TABLE ONLY llmfleet_compat.prefixes
    ADD CONSTRAINT prefixes_pkey PRIMARY KEY (credential_id, hash);


--
-- Name: replicas replicas_pkey; Type: CONSTRAINT; Schema: llmfleet_compat; Owner: -
--

ALTER TABLE ONLY llmfleet_compat.replicas
    ADD CONSTRAINT replicas_pkey PRIMARY KEY (id);


--
-- Name: requests requests_pkey; Type: CONSTRAINT; Schema: llmfleet_compat; Owner: -
--

ALTER TABLE ONLY llmfleet_compat.requests
    ADD CONSTRAINT requests_pkey PRIMARY KEY (id);


--
-- Name: turnarounds turnarounds_pkey; Type: CONSTRAINT; Schema: llmfleet_compat; Owner: -
--

ALTER TABLE ONLY llmfleet_compat.turnarounds
    ADD CONSTRAINT turnarounds_pkey PRIMARY KEY (seq);


--
-- Name: batches_owner; Type: INDEX; Schema: llmfleet_compat; Owner: -
--

CREATE INDEX batches_owner ON llmfleet_compat.batches USING btree (owner) WHERE (state = ANY (ARRAY['intent'::text, 'created'::text]));


--
-- Name: batches_pending; Type: INDEX; Schema: llmfleet_compat; Owner: -
--

CREATE INDEX batches_pending ON llmfleet_compat.batches USING btree (intent_at) WHERE (state = ANY (ARRAY['intent'::text, 'created'::text]));


--
-- Name: ledger_time; Type: INDEX; Schema: llmfleet_compat; Owner: -
--

CREATE INDEX ledger_time ON llmfleet_compat.ledger USING btree ("time");


--
-- Name: prefixes_seen; Type: INDEX; Schema: llmfleet_compat; Owner: -
--

CREATE INDEX prefixes_seen ON llmfleet_compat.prefixes USING btree (seen_at);


--
-- Name: requests_batch; Type: INDEX; Schema: llmfleet_compat; Owner: -
--

CREATE INDEX requests_batch ON llmfleet_compat.requests USING btree (batch_id);


--
-- Name: requests_owner; Type: INDEX; Schema: llmfleet_compat; Owner: -
--

CREATE INDEX requests_owner ON llmfleet_compat.requests USING btree (owner) WHERE (state = 'queued'::text);


--
-- Name: requests_pool; Type: INDEX; Schema: llmfleet_compat; Owner: -
--

CREATE INDEX requests_pool ON llmfleet_compat.requests USING btree (pool, accepted_at) WHERE (state = 'queued'::text);


--
-- Name: requests_queued; Type: INDEX; Schema: llmfleet_compat; Owner: -
--

CREATE INDEX requests_queued ON llmfleet_compat.requests USING btree (accepted_at) WHERE (state = 'queued'::text);


--
-- Name: requests_sent_sync; Type: INDEX; Schema: llmfleet_compat; Owner: -
--

CREATE INDEX requests_sent_sync ON llmfleet_compat.requests USING btree (owner) WHERE ((state = 'submitted'::text) AND (batch_id IS NULL));


--
-- Name: turnarounds_latest; Type: INDEX; Schema: llmfleet_compat; Owner: -
--

CREATE INDEX turnarounds_latest ON llmfleet_compat.turnarounds USING btree (provider, model, at);


--
-- Name: requests requests_batch_id_fkey; Type: FK CONSTRAINT; Schema: llmfleet_compat; Owner: -
--

ALTER TABLE ONLY llmfleet_compat.requests
    ADD CONSTRAINT requests_batch_id_fkey FOREIGN KEY (batch_id) REFERENCES llmfleet_compat.batches(id);


--
-- PostgreSQL database dump complete
--


