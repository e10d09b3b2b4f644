import csv, math, collections, sys
def load(f):
    c=collections.defaultdict(dict)
    for r in csv.DictReader(open(f)):
        c[(r['op'],int(r['ranks']),r['fabric_level'])].setdefault(int(r['bytes']),[]).append(float(r['time_ns']))
    return {k:dict((b,sum(v)/len(v)) for b,v in d.items()) for k,d in c.items()}
def fac(op,n): return 2*(n-1)/n if op=='all_reduce' else (n-1)/n
def q(v,x): v=sorted(v); return v[int(x*(len(v)-1))]
def variants(op,n1,n2,n,a,b,by):
    out={}
    w_log=(math.log(n)-math.log(n1))/(math.log(n2)-math.log(n1)); w_lin=(n-n1)/(n2-n1)
    out['log t in log n']=math.exp(math.log(a[by])+w_log*(math.log(b[by])-math.log(a[by])))
    out['log t in n']=math.exp(math.log(a[by])+w_lin*(math.log(b[by])-math.log(a[by])))
    la=math.log(a[by]/fac(op,n1)); lb=math.log(b[by]/fac(op,n2))
    out['busbw-time in n']=math.exp(la+w_lin*(lb-la))*fac(op,n)
    # latency + bandwidth
    b0=min(a); a1=a[b0]; b1=b[min(b)]
    alat=a1+w_lin*(b1-a1)
    ba=max(1e-9,a[by]-a1); bb=max(1e-9,b[by]-b1)
    Ba=by*fac(op,n1)/ba; Bb=by*fac(op,n2)/bb
    B=math.exp(math.log(Ba)+w_log*(math.log(Bb)-math.log(Ba)))
    out['alpha lin n + busbw log n']=alat+by*fac(op,n)/B
    # max-based: t = max(latency_interp, bandwidth)
    return out
for f in sys.argv[1:]:
    cur=load(f); E=collections.defaultdict(list)
    for (op,n,lvl),pts in cur.items():
        for n1,n2 in ((n//2,n*2),):
            if (op,n1,lvl) not in cur or (op,n2,lvl) not in cur or n1<2: continue
            a=cur[(op,n1,lvl)]; b=cur[(op,n2,lvl)]
            for by,t in pts.items():
                if by in a and by in b:
                    for k,v in variants(op,n1,n2,n,a,b,by).items(): E[k].append(abs(v-t)/t)
    print(f.split('/')[-1])
    for k,v in E.items(): print('   %-28s n=%d median %.2f%% p90 %.2f%%'%(k,len(v),100*q(v,.5),100*q(v,.9)))
